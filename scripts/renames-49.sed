# Issue 49's renames, one spelling per idea (docs/API.md, "CHANGES for 1.x
# users"): old name -> new name, word-bounded. Re-apply after a merge with
#   git ls-files src include tests python bench docs README.md |
#     grep -vE '^bench/NOTES.md$' | grep -E '\.(c|h|py|sh|md|cl)$' |
#     xargs sed -i -E -f scripts/renames-49.sed
# (bench/NOTES.md is a history, kept as written). Lines marked
# "renames-49: keep" (the CHANGES table's old names) are left alone.
/renames-49: keep/b
# the atom-probe synthesis: ptreg_apt_synth_* throughout
s/\bptreg_synth_apt_polycrystal\b/ptreg_apt_synth_polycrystal/g
# the features module: ptreg_features_* throughout (features.h)
s/\bptreg_feature_options_default\b/ptreg_features_options_default/g
s/\bptreg_feature_option_table\b/ptreg_features_option_table/g
s/\bptreg_feature_options\b/ptreg_features_options/g
s/\bptreg_feature_gpu\b/ptreg_features_gpu/g
# the resident handles: _create, _run (the one computation the handle is
# kept for), _destroy; the features model keeps _fpfh (it computes two
# descriptors), the tracker _push (a stream), the index _nearest (a query)
s/\bptreg_icp_model_register\b/ptreg_icp_model_run/g
s/\bptreg_harris3d_volume_detect\b/ptreg_harris3d_volume_run/g
# the volume writers: one, the extension picks the format (the same arguments)
s/\bptreg_volume_write_nrrd\b/ptreg_volume_write/g
s/\bptreg_volume_write_nifti\b/ptreg_volume_write/g
