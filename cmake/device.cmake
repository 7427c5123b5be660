# The GPU backends (src/device/). Both load their libraries at run time
# with dlopen, so the build needs only headers and one binary runs with or
# without a GPU: CUDA (the driver API and NVRTC; cuda.h and nvrtc.h) and
# OpenCL 1.2 (the ICD loader; CL/cl.h). AUTO builds a backend when its
# headers are found; ON requires them; OFF leaves it out.
set(PTREG_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when cuda.h and nvrtc.h are found), ON or OFF")
set_property(CACHE PTREG_CUDA PROPERTY STRINGS AUTO ON OFF)
set(PTREG_OPENCL AUTO CACHE STRING "Build the OpenCL backend: AUTO (when CL/cl.h is found), ON or OFF")
set_property(CACHE PTREG_OPENCL PROPERTY STRINGS AUTO ON OFF)

set(PTREG_DEVICE_DEFINITIONS "")
set(PTREG_DEVICE_INCLUDES "")
set(PTREG_DEVICE_EXCLUDE "")

function(ptreg_backend_switch name setting found)
  if(setting STREQUAL "ON" AND NOT found)
    message(FATAL_ERROR "PTREG_${name}=ON but its headers were not found")
  endif()
endfunction()

set(PTREG_HAVE_CUDA OFF)
if(NOT PTREG_CUDA STREQUAL "OFF")
  find_path(PTREG_CUDA_INCLUDE cuda.h HINTS $ENV{CUDA_HOME}/include $ENV{CUDA_PATH}/include
            PATHS /usr/local/cuda/include /usr/include)
  find_path(PTREG_NVRTC_INCLUDE nvrtc.h HINTS ${PTREG_CUDA_INCLUDE} $ENV{CUDA_HOME}/include
            PATHS /usr/local/cuda/include /usr/include)
  if(PTREG_CUDA_INCLUDE AND PTREG_NVRTC_INCLUDE)
    set(PTREG_HAVE_CUDA ON)
  endif()
  ptreg_backend_switch(CUDA "${PTREG_CUDA}" ${PTREG_HAVE_CUDA})
endif()
if(PTREG_HAVE_CUDA)
  list(APPEND PTREG_DEVICE_DEFINITIONS PTREG_HAVE_CUDA=1)
  list(APPEND PTREG_DEVICE_INCLUDES ${PTREG_CUDA_INCLUDE} ${PTREG_NVRTC_INCLUDE})
  message(STATUS "ptreg: CUDA backend on (headers in ${PTREG_CUDA_INCLUDE}; libcuda and libnvrtc loaded at run time)")
else()
  list(APPEND PTREG_DEVICE_EXCLUDE "/src/device/cuda\\.c$")
  message(STATUS "ptreg: CUDA backend off")
endif()

set(PTREG_HAVE_OPENCL OFF)
if(NOT PTREG_OPENCL STREQUAL "OFF")
  find_path(PTREG_OPENCL_INCLUDE CL/cl.h PATHS /usr/include /usr/local/cuda/include)
  if(PTREG_OPENCL_INCLUDE)
    set(PTREG_HAVE_OPENCL ON)
  endif()
  ptreg_backend_switch(OPENCL "${PTREG_OPENCL}" ${PTREG_HAVE_OPENCL})
endif()
if(PTREG_HAVE_OPENCL)
  list(APPEND PTREG_DEVICE_DEFINITIONS PTREG_HAVE_OPENCL=1)
  list(APPEND PTREG_DEVICE_INCLUDES ${PTREG_OPENCL_INCLUDE})
  message(STATUS "ptreg: OpenCL backend on (libOpenCL.so.1 loaded at run time)")
else()
  list(APPEND PTREG_DEVICE_EXCLUDE "/src/device/opencl\\.c$")
  message(STATUS "ptreg: OpenCL backend off")
endif()

# Kernel sources (the dialect and every .cl file) are embedded in the
# library as byte arrays, generated at build time.
file(GLOB PTREG_KERNEL_FILES CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}/src
     ${CMAKE_CURRENT_SOURCE_DIR}/src/*/*.cl ${CMAKE_CURRENT_SOURCE_DIR}/src/*/*/*.cl)
list(PREPEND PTREG_KERNEL_FILES device/dialect.h)
set(PTREG_KERNEL_SOURCES_C ${CMAKE_CURRENT_BINARY_DIR}/generated/kernel_sources.c)
set(PTREG_KERNEL_DEPENDS "")
foreach(f ${PTREG_KERNEL_FILES})
  list(APPEND PTREG_KERNEL_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/${f})
endforeach()
string(REPLACE ";" "," PTREG_KERNEL_LIST "${PTREG_KERNEL_FILES}")
add_custom_command(OUTPUT ${PTREG_KERNEL_SOURCES_C}
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/src "-DFILES=${PTREG_KERNEL_LIST}"
          -DOUT=${PTREG_KERNEL_SOURCES_C} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
  DEPENDS ${PTREG_KERNEL_DEPENDS} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
  COMMENT "Embedding the kernel sources" VERBATIM)
