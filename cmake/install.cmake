# Installing hpr (issue 17): `cmake --install build [--prefix /usr]` and `cpack -G DEB` in the build folder.
#   bin/hpr                                  the binary (kernels are embedded in it)
#   /etc/hpr/hpr.toml                        config/hpr.toml for a service: unlimited generated traffic at a gentle
#                                            rate into the null port until it is edited (a conffile in the package)
#   lib/systemd/system/hpr.service           packaging/hpr.service (Type=notify)
#   share/hpr/data/                          a sample of the real data: routes, rules, vectors, small captures and
#                                            packaging/sample-captures.txt (found by the binary: hpr/data_dir.hpp)
#   share/doc/hpr/                           README.md and docs/*.md
include(GNUInstallDirs)
# /etc whatever the prefix: the service reads /etc/hpr/hpr.toml (a staged install: DESTDIR=... cmake --install).
set(HPR_INSTALL_CONFDIR /etc/hpr CACHE PATH "Where the service's hpr.toml is installed")
install(TARGETS hpr RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

file(READ ${PROJECT_SOURCE_DIR}/config/hpr.toml _toml)
string(REPLACE "packets = 1000000         # generator: packets to send (0: unlimited)"
               "packets = 0               # generator: packets to send (0: unlimited)" _toml "${_toml}")
string(REPLACE "rate_pps = 0              # generator: offered packets/s (0: as fast as possible)"
               "rate_pps = 10000          # generator: offered packets/s (0: as fast as possible)" _toml "${_toml}")
string(PREPEND _toml "# /etc/hpr/hpr.toml: the configuration of the hpr service (systemctl restart hpr after editing).\n"
                     "# As installed it forwards generated traffic at 10 kpps into the null port: set [input] and\n"
                     "# [output] to your ports (dpdk, pcap). Every key below is described in /usr/share/doc/hpr.\n")
file(WRITE ${CMAKE_BINARY_DIR}/packaging/hpr.toml "${_toml}")
install(FILES ${CMAKE_BINARY_DIR}/packaging/hpr.toml DESTINATION ${HPR_INSTALL_CONFDIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/hpr.service DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB _docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The data sample, where the configured data folder has it.
set(_d ${HPR_DATA_DIR_TESTS})  # the data folder this configure found (data/ or ../shared/data)
if(EXISTS ${_d}/routes/ipasn_20140513.dat.gz)
  set(_dest ${CMAKE_INSTALL_DATADIR}/hpr/data)
  install(FILES ${_d}/README.md DESTINATION ${_dest})
  install(DIRECTORY ${_d}/routes ${_d}/rules ${_d}/vectors DESTINATION ${_dest})
  file(STRINGS ${PROJECT_SOURCE_DIR}/packaging/sample-captures.txt _named REGEX "^[^#]")
  file(GLOB _caps ${_d}/pcap/ndpi/*)
  set(_sample)
  foreach(f ${_caps})
    get_filename_component(n ${f} NAME)
    file(SIZE ${f} sz)
    if(sz LESS 40960 OR n IN_LIST _named)
      list(APPEND _sample ${f})
    endif()
  endforeach()
  install(FILES ${_sample} DESTINATION ${_dest}/pcap/ndpi)
else()
  message(STATUS "install: no data under ${_d}: the package carries none (scripts/get-data.sh brings it)")
endif()

# Debian package: cpack -G DEB (dependencies from dpkg-shlibdeps; /etc/hpr/hpr.toml a conffile; the service
# enabled and started on install, stopped on removal: packaging/postinst, prerm, postrm).
set(CPACK_PACKAGE_NAME hpr)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hpr developers <hpr@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "heterogeneous packet-processing runtime (DPDK, OpenCL, native lanes)")
set(CPACK_PACKAGE_DESCRIPTION "IPv4 forwarding, DPI, MD5 and AES-128-CBC on every OpenCL device and native CPU lanes, with an online scheduler; a control socket (hpr ctl) and a systemd service.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS procps)  # /bin/kill for the unit's ExecReload (minbase Debian lacks it)
set(CPACK_STRIP_FILES ON)  # the binary without its debug info (90 MB with it in a RelWithDebInfo build)
set(CPACK_WARN_ON_ABSOLUTE_INSTALL_DESTINATION OFF)  # /etc/hpr, on purpose
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "pocl-opencl-icd | ocl-icd-libopencl1")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/conffiles ${PROJECT_SOURCE_DIR}/packaging/postinst
    ${PROJECT_SOURCE_DIR}/packaging/prerm ${PROJECT_SOURCE_DIR}/packaging/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_GENERATOR DEB)
include(CPack)
