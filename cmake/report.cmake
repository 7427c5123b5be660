# The HTML reports' viewer: three.js and web/viewer.js bundled into one
# script by esbuild, from web/'s npm packages (pinned in web/package-lock.json;
# `make deps` installs them, offline once installed), taken into the library
# whole (src/report/viewer_asset.c). Without the packages (PTREG_HTML=AUTO)
# the library is built without it and the reports say so when asked for.
set(PTREG_HTML AUTO CACHE STRING "AUTO|ON|OFF: the HTML reports' viewer (needs web/node_modules: make deps)")
set(PTREG_WEB ${CMAKE_CURRENT_SOURCE_DIR}/web)
set(PTREG_ESBUILD ${PTREG_WEB}/node_modules/.bin/esbuild)
set(PTREG_VIEWER_FOUND OFF)
if(NOT PTREG_HTML STREQUAL "OFF" AND EXISTS ${PTREG_ESBUILD} AND EXISTS ${PTREG_WEB}/node_modules/three/package.json)
  set(PTREG_VIEWER_FOUND ON)
elseif(PTREG_HTML STREQUAL "ON")
  message(FATAL_ERROR "PTREG_HTML=ON: web/node_modules has no three.js or esbuild: run `make deps`")
endif()

function(ptreg_add_report_viewer target)
  if(NOT PTREG_VIEWER_FOUND)
    message(STATUS "HTML reports: without the viewer (web/node_modules missing: `make deps` installs it)")
    return()
  endif()
  set(bundle ${CMAKE_CURRENT_BINARY_DIR}/report/viewer.js)
  add_custom_command(OUTPUT ${bundle}
    COMMAND ${PTREG_ESBUILD} ${PTREG_WEB}/viewer.js --bundle --minify --format=iife --target=es2020
            --log-level=warning --outfile=${bundle}
    DEPENDS ${PTREG_WEB}/viewer.js ${PTREG_WEB}/package-lock.json
    COMMENT "Bundling the report viewer (three.js, web/viewer.js)" VERBATIM)
  add_custom_target(ptreg_report_viewer DEPENDS ${bundle})
  add_dependencies(${target} ptreg_report_viewer)
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/src/report/viewer_asset.c PROPERTIES
    OBJECT_DEPENDS ${bundle} COMPILE_DEFINITIONS "PTREG_VIEWER_JS=\"${bundle}\"")
  message(STATUS "HTML reports: the viewer bundled from web/ (three.js)")
endfunction()
