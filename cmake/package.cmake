# glass as a package: one static library, libglass (every module the runtime needs and the C API;
# not server/ or cli/), exported as glass::glass for find_package(glass), add_subdirectory and
# pkg-config. The module libraries stay what the tree's own targets link; libglass archives their
# objects once more (nothing is compiled twice), so a consumer links one library and never has to
# order the modules. Its link interface is the external libraries only: the public headers include
# no dependency but glass/json.h, which includes nlohmann_json (header-only) for a consumer that
# parses JSON with glass's bounded parser, so nlohmann_json is not one to link.
include(GNUInstallDirs)

set(glass_library_modules core graph tokenizer formats grammar backend models kv runtime capi)
set(glass_library_objects)
foreach(module ${glass_library_modules})
  list(APPEND glass_library_objects $<TARGET_OBJECTS:glass_${module}>)
endforeach()
# Target glass is the command; the library is glass_lib in the tree, libglass.a and glass::glass outside.
add_library(glass_lib STATIC ${glass_library_objects})
add_library(glass::glass ALIAS glass_lib)
set_target_properties(glass_lib PROPERTIES OUTPUT_NAME glass EXPORT_NAME glass LINKER_LANGUAGE CXX)
target_include_directories(glass_lib INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                               $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(glass_lib INTERFACE cxx_std_20)
target_link_libraries(glass_lib INTERFACE fmt::fmt PkgConfig::PCRE2 PkgConfig::UTF8PROC Threads::Threads)

if(GLASS_INSTALL)
  include(CMakePackageConfigHelpers)
  set(glass_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/glass)
  install(TARGETS glass_lib EXPORT glassTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/glass DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
  install(EXPORT glassTargets NAMESPACE glass:: DESTINATION ${glass_cmake_dir})
  configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/glassConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/glassConfig.cmake INSTALL_DESTINATION ${glass_cmake_dir})
  # 0.x: a minor version may break the API.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/glassConfigVersion.cmake
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/glassConfig.cmake ${PROJECT_BINARY_DIR}/glassConfigVersion.cmake
          DESTINATION ${glass_cmake_dir})

  # pkg-config: the prefix is found from the .pc file's own place, so `cmake --install --prefix P`
  # may choose P after configuring. A static library lists what it needs in Libs/Requires (not
  # .private), and C programs linking it get the C++ runtime CMake adds for C++ objects.
  file(RELATIVE_PATH glass_pc_to_prefix /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
  string(REGEX REPLACE "/$" "" glass_pc_to_prefix "${glass_pc_to_prefix}")
  set(glass_pc_cxx_libs)
  foreach(lib ${CMAKE_CXX_IMPLICIT_LINK_LIBRARIES})
    if(NOT lib IN_LIST CMAKE_C_IMPLICIT_LINK_LIBRARIES)
      string(APPEND glass_pc_cxx_libs " -l${lib}")
    endif()
  endforeach()
  configure_file(${CMAKE_CURRENT_LIST_DIR}/glass.pc.in ${PROJECT_BINARY_DIR}/glass.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/glass.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

  if(TARGET glass)
    install(TARGETS glass RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endif()

# A consumer project (tests/consumer/) built against `cmake --install` of this tree and against the
# source tree through add_subdirectory (tests/consumer/run.sh says what each variant builds).
if(GLASS_BUILD_TESTS AND GLASS_INSTALL)
  set(glass_consumer_args ${CMAKE_COMMAND} ${CMAKE_GENERATOR} ${CMAKE_C_COMPILER} ${CMAKE_CXX_COMPILER}
      ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR}/models/stories260K.gguf
      ${GLASS_SANITIZE})
  add_test(NAME GlassConsumer.FindPackage
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/consumer/run.sh install ${glass_consumer_args})
  add_test(NAME GlassConsumer.AddSubdirectory
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/consumer/run.sh subdirectory ${glass_consumer_args})
  set_tests_properties(GlassConsumer.FindPackage GlassConsumer.AddSubdirectory PROPERTIES
    LABELS glass_consumer_test TIMEOUT 900 PROCESSORS 2)
  # `scripts/test.sh glass_consumer_test` builds what the install needs and runs the two alone.
  add_custom_target(glass_consumer_test)
  add_dependencies(glass_consumer_test glass_lib)
  if(TARGET glass)
    add_dependencies(glass_consumer_test glass)
  endif()
endif()
