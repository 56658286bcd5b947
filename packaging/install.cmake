# Install rules and the Debian package (issue 32, docs/packaging.md). Included by the top-level
# CMakeLists.txt after the `sluice` target exists.
#
#   cmake --install build --prefix /usr        the files below, under DESTDIR if set
#   cpack --config build/CPackConfig.cmake     dist/sluice_<version>_amd64.deb (scripts/package.sh)
#
# The default config and the man page are generated from the built binary, so neither can drift
# from the option table: `sluice serve --print-config` and help2man over `--help`.
include(GNUInstallDirs)

set(SLUICE_PKG_GEN ${CMAKE_BINARY_DIR}/packaging)
file(MAKE_DIRECTORY ${SLUICE_PKG_GEN})

add_custom_command(
  OUTPUT ${SLUICE_PKG_GEN}/sluice.yaml
  COMMAND sh -c "\"$1\" serve --print-config > \"$2\"" sh $<TARGET_FILE:sluice> ${SLUICE_PKG_GEN}/sluice.yaml
  DEPENDS sluice
  COMMENT "Generating sluice.yaml from the option table"
  VERBATIM)
set(SLUICE_PKG_OUTPUTS ${SLUICE_PKG_GEN}/sluice.yaml)

find_program(HELP2MAN help2man)
if(HELP2MAN)
  # The subcommands' own --help as sections of the page (help2man reads only the top-level one).
  add_custom_command(
    OUTPUT ${SLUICE_PKG_GEN}/sluice.1 ${SLUICE_PKG_GEN}/sluice.1.gz
    COMMAND sh ${CMAKE_SOURCE_DIR}/packaging/man-sections.sh $<TARGET_FILE:sluice> ${SLUICE_PKG_GEN}/sections.h2m
    COMMAND ${HELP2MAN} --no-info --section=1 --include=${SLUICE_PKG_GEN}/sections.h2m
            "--name=an OpenAI-compatible streaming gateway in bounded memory"
            --output=${SLUICE_PKG_GEN}/sluice.1 $<TARGET_FILE:sluice>
    # Debian's way: compressed with no name or time stamp inside (gzip -n), so a rebuild is identical.
    COMMAND sh -c "gzip -9n -c \"$1\" > \"$1.gz\"" sh ${SLUICE_PKG_GEN}/sluice.1
    DEPENDS sluice ${CMAKE_SOURCE_DIR}/packaging/man-sections.sh
    COMMENT "Generating the man page sluice(1) from --help"
    VERBATIM)
  list(APPEND SLUICE_PKG_OUTPUTS ${SLUICE_PKG_GEN}/sluice.1.gz)
  install(FILES ${SLUICE_PKG_GEN}/sluice.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man page (scripts/install-deps.sh installs it)")
endif()
# Built with `all`, so an install never finds them missing.
add_custom_target(sluice_package_data ALL DEPENDS ${SLUICE_PKG_OUTPUTS})

install(TARGETS sluice RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# /etc whatever the prefix: the unit and the docs name /etc/sluice/sluice.yaml.
install(FILES ${SLUICE_PKG_GEN}/sluice.yaml DESTINATION /etc/sluice)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/default DESTINATION /etc/default RENAME sluice)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/sluice.service DESTINATION lib/systemd/system)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/keys.example ${CMAKE_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")

# The Debian package. Its dependencies are the packages of the libraries the binary links, found by
# dpkg-shlibdeps (dpkg-dev) on the Debian 12 machine that builds it; adduser for the postinst.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "sluice maintainers <sluice@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OpenAI-compatible streaming gateway in bounded memory")
set(CPACK_PACKAGE_DESCRIPTION "sluice streams LLM completions to many clients at once in bounded memory: admission and memory budgets, resilient upstream routing, structured outputs, a Redis Streams broker and worker processes, behind an OpenAI-compatible (and Anthropic Messages) API.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/postinst ${CMAKE_SOURCE_DIR}/packaging/postrm ${SLUICE_PKG_GEN}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_SOURCE_DIR}/dist)
file(WRITE ${SLUICE_PKG_GEN}/conffiles "/etc/sluice/sluice.yaml\n/etc/default/sluice\n")
include(CPack)
