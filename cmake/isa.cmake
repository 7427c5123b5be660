# Hot kernels are compiled once per instruction set: a file foo_isa.c is built
# as foo_isa.c.generic / .avx2 / .avx512 objects, each defining its functions
# with the suffix PTREG_ISA_SUFFIX (ISA_FN, src/core/cpu_isa.h), and the CPU
# module's kernel table (PTREG_ISA_TABLE, src/core/cpu.h) holds each ISA's copies.
set(PTREG_ISA_LIST generic)
# No errno from sqrtf and friends: the kernels never read it, and a call
# that may set it stops GCC from vectorising the loop around it.
set(PTREG_ISA_COMMON_FLAGS -fno-math-errno)
set(PTREG_ISA_FLAGS_generic "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  list(APPEND PTREG_ISA_LIST avx2 avx512)
  set(PTREG_ISA_FLAGS_avx2 -mavx2 -mfma -mf16c -mbmi -mbmi2 -mpopcnt)
  set(PTREG_ISA_FLAGS_avx512 -mavx512f -mavx512vl -mavx512dq -mavx512bw -mavx2 -mfma -mf16c
      -mbmi -mbmi2 -mpopcnt -mprefer-vector-width=512)
endif()

set(PTREG_ISA_OBJECTS "")
function(ptreg_add_isa_kernels target)
  foreach(isa ${PTREG_ISA_LIST})
    set(lib ${target}_isa_${isa})
    add_library(${lib} OBJECT ${ARGN})
    set_target_properties(${lib} PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
    target_include_directories(${lib} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include
                               ${CMAKE_CURRENT_SOURCE_DIR}/src)
    string(TOUPPER ${isa} ISA_UPPER)
    target_compile_definitions(${lib} PRIVATE PTREG_BUILD_ISA_${ISA_UPPER}=1 PTREG_ISA_SUFFIX=_${isa})
    target_compile_options(${lib} PRIVATE ${PTREG_C_FLAGS} ${PTREG_ISA_COMMON_FLAGS} ${PTREG_ISA_FLAGS_${isa}}
                           ${PTREG_FAULT_FLAGS})
    if(OpenMP_C_FOUND)
      target_link_libraries(${lib} PRIVATE OpenMP::OpenMP_C)
    endif()
    list(APPEND objs $<TARGET_OBJECTS:${lib}>)
  endforeach()
  set(PTREG_ISA_OBJECTS ${PTREG_ISA_OBJECTS} ${objs} PARENT_SCOPE)
endfunction()
