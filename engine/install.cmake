# What `cmake --install` puts under the prefix (docs/packaging.md): the
# public headers, libroundtable.so.MAJOR and libroundtable.a, the CMake
# package (roundtableConfig.cmake, its version file and the exported
# targets roundtable::roundtable and roundtable::roundtable_static),
# roundtable.pc, the tools and (engine/python/CMakeLists.txt) the Python
# module.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${RT_PUBLIC_INCLUDE}/roundtable
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${RT_GENERATED_INCLUDE}/roundtable/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/roundtable)
install(TARGETS ${rt_library_targets} EXPORT roundtableTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(rt_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/roundtable)
install(EXPORT roundtableTargets NAMESPACE roundtable::
        DESTINATION ${rt_cmake_dir})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/engine/roundtableConfig.cmake.in
  ${PROJECT_BINARY_DIR}/roundtableConfig.cmake
  INSTALL_DESTINATION ${rt_cmake_dir})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/roundtableConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/roundtableConfig.cmake
              ${PROJECT_BINARY_DIR}/roundtableConfigVersion.cmake
        DESTINATION ${rt_cmake_dir})

# pkg-config: the shared library by default, the static one with --static
# (then liburing, xxHash and Abseil's libraries come from Requires.private).
# Relocatable: the prefix is found from the .pc file's own place, so a
# prefix given to `cmake --install --prefix` works as well as the
# configured one.
file(RELATIVE_PATH rt_pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" rt_pc_to_prefix "${rt_pc_to_prefix}")
configure_file(${PROJECT_SOURCE_DIR}/engine/roundtable.pc.in
               ${PROJECT_BINARY_DIR}/roundtable.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/roundtable.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(RT_BUILD_TOOLS)
  install(TARGETS roundtable blockbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
