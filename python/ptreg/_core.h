/* ptreg._core's private declarations: each topic file's functions
 * that another file uses (the method table in _core.c). */
#ifndef PTREG_PY_CORE_H
#define PTREG_PY_CORE_H

#include "py_common.h"

/* hidden: the extension exports PyInit__core alone */
#pragma GCC visibility push(hidden)

/* py_devices.c */
PyObject *py_version(PyObject *self, PyObject *args);
PyObject *py_set_num_threads(PyObject *self, PyObject *arg);
PyObject *py_get_num_threads(PyObject *self, PyObject *args);
PyObject *py_devices(PyObject *self, PyObject *args);

/* py_io.c */
PyObject *py_read_cloud(PyObject *self, PyObject *args);
PyObject *py_write_cloud(PyObject *self, PyObject *args);
PyObject *py_read_transform(PyObject *self, PyObject *args);
PyObject *py_write_transform(PyObject *self, PyObject *args);
PyObject *py_read_volume(PyObject *self, PyObject *args);
PyObject *py_write_volume(PyObject *self, PyObject *args);

/* py_filters.c */
PyObject *py_voxel_downsample(PyObject *self, PyObject *args);
PyObject *py_statistical_outliers(PyObject *self, PyObject *args);
PyObject *py_radius_outliers(PyObject *self, PyObject *args);
PyObject *py_random_downsample(PyObject *self, PyObject *args);
PyObject *py_uniform_downsample(PyObject *self, PyObject *args);

/* py_features.c */
PyObject *py_normals(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_fpfh(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_pfh(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_harris3d(PyObject *self, PyObject *args, PyObject *kwargs);

/* py_icp.c */
PyObject *py_icp_normals(PyObject *self, PyObject *name);
PyObject *py_icp(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_emicp(PyObject *self, PyObject *args, PyObject *kwargs);

/* py_cpd.c */
PyObject *py_cpd(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_cpd_warp(PyObject *self, PyObject *args);

/* py_register.c */
PyObject *py_register(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_multiway(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_evaluate(PyObject *self, PyObject *args);
PyObject *py_register_correspondences(PyObject *self, PyObject *args);

/* py_lddmm.c */
PyObject *py_lddmm_register(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_lddmm_warp(PyObject *self, PyObject *args, PyObject *kwargs);

/* py_batch.c */
PyObject *py_batch(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_stop_reason_name(PyObject *self, PyObject *arg);

/* py_tune.c */
PyObject *py_tune(PyObject *self, PyObject *args, PyObject *kwargs);

/* py_index.c */
PyObject *py_index_create(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_index_load(PyObject *self, PyObject *args);
ptreg_model_index *index_of(PyObject *capsule);
PyObject *py_index_save(PyObject *self, PyObject *args);
PyObject *py_index_info(PyObject *self, PyObject *capsule);
PyObject *py_index_nearest(PyObject *self, PyObject *args);
PyObject *py_kdtree_create(PyObject *self, PyObject *capsule);
PyObject *py_kdtree_knn(PyObject *self, PyObject *args);
PyObject *py_kdtree_radius(PyObject *self, PyObject *args);

/* py_odometry.c */
PyObject *py_odometry_create(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_odometry_push(PyObject *self, PyObject *args);
PyObject *py_odometry_map(PyObject *self, PyObject *args);
PyObject *py_odometry_summary(PyObject *self, PyObject *capsule);
PyObject *py_localizer_create(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_read_trajectory(PyObject *self, PyObject *args);
/* py_track.c */
PyObject *py_tracker_create(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_tracker_push(PyObject *self, PyObject *args);
PyObject *py_eval_trajectory(PyObject *self, PyObject *args, PyObject *kwargs);

/* py_report.c */
PyObject *py_report_available(PyObject *self, PyObject *args);
PyObject *py_report_html(PyObject *self, PyObject *args);

#pragma GCC visibility pop

#endif /* PTREG_PY_CORE_H */
