install(TARGETS ptreg ptreg_static EXPORT ptregTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ptreg_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/ptreg DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PTREG_UMBRELLA_DIR}/ptreg/ptreg.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ptreg)
install(FILES docs/ptreg.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# pkg-config: static users need liblzf, qhull, zlib, liblbfgs, libcjson, CHOLMOD, OpenMP and libm too.
set(PTREG_PC_PRIVATE_LIBS "-lcholmod -lm -ldl -lpthread")
if(OpenMP_C_FOUND)
  string(APPEND PTREG_PC_PRIVATE_LIBS " ${OpenMP_C_FLAGS}")
endif()
# Relocatable: the prefix is found from the .pc file's own folder, so
# `cmake --install --prefix DIR` works as well as the configured prefix.
file(RELATIVE_PATH PTREG_PC_TO_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
configure_file(cmake/ptreg.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ptreg.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ptreg.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

include(CMakePackageConfigHelpers)
install(EXPORT ptregTargets NAMESPACE ptreg:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ptreg)
configure_package_config_file(cmake/ptregConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ptregConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ptreg)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ptregConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ptregConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ptregConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ptreg)
