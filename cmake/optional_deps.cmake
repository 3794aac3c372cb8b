# Optional dependencies (issue 14): HPR_WITH_DPDK, HPR_WITH_HYPERSCAN, HPR_WITH_PROMETHEUS, HPR_WITH_IPSEC_MB, each
#   AUTO (default): on when found, off otherwise;  ON: required, configuring fails without it;  OFF: not used.
# Each sets HPR_HAVE_<NAME> (0/1), given to the code in hpr/build_features.hpp (target hpr_build_features). Off:
#   DPDK        dpdk: ports refuse with a message (runtime/ports/dpdk_port_none.cpp); its tests and benchmarks are
#               not built.
#   Hyperscan   the DPI peer (kernels/dpi/hs_peer.hpp) and the tests and benchmarks that use it are not built.
#   prometheus  --prometheus refuses with a message (pipeline/telemetry_none.cpp).
#   ipsec-mb    Intel's multi-buffer crypto library (intel-ipsec-mb.h, libIPSec_MB; Debian libipsec-mb-dev, amd64
#               only): the AES-128-CBC peer (bench/crypto/ipsec_mb_peer.hpp); off, crypto_bench skips it and says so
#               and its test is not built.
# The OpenCL headers and ICD loader: Debian's (ocl-icd-opencl-dev, opencl-c-headers, opencl-clhpp-headers) first,
# else the CUDA Toolkit's ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda); CL/opencl.hpp must be found in either.

# Reads the AUTO/ON/OFF setting VAR into MODE_OUT (AUTO, ON or OFF; other CMake booleans map to ON/OFF).
function(hpr_dep_mode var mode_out)
  set(${var} AUTO CACHE STRING "AUTO (use when found), ON (required) or OFF")
  set_property(CACHE ${var} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${var}}" v)
  if(v STREQUAL "AUTO")
    set(${mode_out} AUTO PARENT_SCOPE)
  elseif(v MATCHES "^(ON|YES|TRUE|Y|1)$")
    set(${mode_out} ON PARENT_SCOPE)
  elseif(v MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(${mode_out} OFF PARENT_SCOPE)
  else()
    message(FATAL_ERROR "${var}=${${var}}: want AUTO, ON or OFF")
  endif()
endfunction()

# Settles HPR_HAVE_<name> from the mode and whether the package was found; ON without it is fatal.
function(hpr_dep_settle var name found what)
  hpr_dep_mode(${var} mode)
  if(mode STREQUAL "OFF")
    set(HPR_HAVE_${name} 0 PARENT_SCOPE)
  elseif(found)
    set(HPR_HAVE_${name} 1 PARENT_SCOPE)
  elseif(mode STREQUAL "ON")
    message(FATAL_ERROR "${var}=ON but ${what} was not found: install it (scripts/install-deps.sh) or configure "
                        "with -D${var}=AUTO or OFF")
  else()
    set(HPR_HAVE_${name} 0 PARENT_SCOPE)
  endif()
endfunction()

hpr_dep_mode(HPR_WITH_DPDK _mode)
if(NOT _mode STREQUAL "OFF")
  pkg_check_modules(DPDK QUIET IMPORTED_TARGET libdpdk)
endif()
hpr_dep_settle(HPR_WITH_DPDK DPDK "${DPDK_FOUND}" "DPDK (pkg-config libdpdk; Debian: libdpdk-dev)")

hpr_dep_mode(HPR_WITH_HYPERSCAN _mode)
if(NOT _mode STREQUAL "OFF")
  pkg_check_modules(HS QUIET IMPORTED_TARGET libhs)
endif()
hpr_dep_settle(HPR_WITH_HYPERSCAN HYPERSCAN "${HS_FOUND}" "Hyperscan (pkg-config libhs; Debian: libhyperscan-dev)")

hpr_dep_mode(HPR_WITH_IPSEC_MB _mode)
if(NOT _mode STREQUAL "OFF")
  find_path(IPSEC_MB_INCLUDE_DIR intel-ipsec-mb.h)
  find_library(IPSEC_MB_LIBRARY IPSec_MB)
endif()
if(IPSEC_MB_INCLUDE_DIR AND IPSEC_MB_LIBRARY)
  set(_imb_found TRUE)
  if(NOT TARGET hpr::ipsec_mb)
    add_library(hpr::ipsec_mb UNKNOWN IMPORTED)
    set_target_properties(hpr::ipsec_mb PROPERTIES IMPORTED_LOCATION "${IPSEC_MB_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${IPSEC_MB_INCLUDE_DIR}")
  endif()
else()
  set(_imb_found FALSE)
endif()
hpr_dep_settle(HPR_WITH_IPSEC_MB IPSEC_MB "${_imb_found}"
               "intel-ipsec-mb (intel-ipsec-mb.h and libIPSec_MB; Debian amd64: libipsec-mb-dev)")

hpr_dep_mode(HPR_WITH_PROMETHEUS _mode)
if(NOT _mode STREQUAL "OFF")
  find_package(prometheus-cpp CONFIG QUIET)
endif()
if(TARGET prometheus-cpp::pull)
  set(_prom_found TRUE)
else()
  set(_prom_found FALSE)
endif()
hpr_dep_settle(HPR_WITH_PROMETHEUS PROMETHEUS "${_prom_found}"
               "prometheus-cpp (CMake package prometheus-cpp with target prometheus-cpp::pull; Debian: prometheus-cpp-dev)")

# OpenCL: Debian's first; the CUDA Toolkit's where Debian's headers or loader are not installed.
find_package(OpenCL QUIET)
set(HPR_OPENCL_FROM "system")
if(NOT OpenCL_FOUND)
  set(_cuda_roots $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda)
  find_path(OpenCL_INCLUDE_DIR CL/cl.h HINTS ${_cuda_roots}
    PATH_SUFFIXES include targets/x86_64-linux/include targets/sbsa-linux/include targets/aarch64-linux/include)
  find_library(OpenCL_LIBRARY OpenCL HINTS ${_cuda_roots}
    PATH_SUFFIXES lib64 lib targets/x86_64-linux/lib targets/sbsa-linux/lib targets/aarch64-linux/lib)
  find_package(OpenCL)
  if(NOT OpenCL_FOUND)
    message(FATAL_ERROR "OpenCL headers and ICD loader not found: install ocl-icd-opencl-dev and opencl-c-headers "
                        "(scripts/install-deps.sh), or the CUDA Toolkit ($CUDA_HOME or /usr/local/cuda), or set "
                        "OpenCL_INCLUDE_DIR and OpenCL_LIBRARY")
  endif()
  set(HPR_OPENCL_FROM "CUDA Toolkit")
endif()
# The C++ bindings are not in every SDK (the CUDA Toolkit has none): Debian's opencl-clhpp-headers or Khronos's
# OpenCL-CLHPP, found beside the C headers or in HPR_OPENCL_HPP_DIR.
find_path(HPR_OPENCL_HPP_DIR CL/opencl.hpp HINTS ${OpenCL_INCLUDE_DIRS}
  DOC "Directory holding CL/opencl.hpp (Khronos C++ bindings)")
if(NOT HPR_OPENCL_HPP_DIR)
  message(FATAL_ERROR "CL/opencl.hpp (Khronos OpenCL C++ bindings) not found beside ${OpenCL_INCLUDE_DIRS}: install "
                      "opencl-clhpp-headers or KhronosGroup/OpenCL-CLHPP and set HPR_OPENCL_HPP_DIR to its include dir")
endif()
if(NOT HPR_OPENCL_HPP_DIR IN_LIST OpenCL_INCLUDE_DIRS)
  set_property(TARGET OpenCL::OpenCL APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${HPR_OPENCL_HPP_DIR})
endif()

# What the build has, for `hpr --version`, `hpr devices` and the tests: hpr/build_features.hpp (HPR_HAVE_* as 0/1),
# generated into the build tree and used only by the targets that link hpr_build_features.
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_features.hpp.in ${PROJECT_BINARY_DIR}/generated/hpr/build_features.hpp
  @ONLY)
add_library(hpr_build_features INTERFACE)
target_include_directories(hpr_build_features INTERFACE ${PROJECT_BINARY_DIR}/generated)

# One line, printed once everything is configured (hpr_dep_summary at the end of the top-level CMakeLists).
function(hpr_dep_summary)
  set(parts)
  foreach(p DPDK:DPDK HYPERSCAN:Hyperscan PROMETHEUS:prometheus-cpp IPSEC_MB:intel-ipsec-mb)
    string(REPLACE ":" ";" p "${p}")
    list(GET p 0 var)
    list(GET p 1 name)
    if(HPR_HAVE_${var})
      list(APPEND parts "${name} on")
    else()
      list(APPEND parts "${name} off")
    endif()
  endforeach()
  if(HPR_NVML_HEADER_USED)
    list(APPEND parts "NVML header toolkit")
  else()
    list(APPEND parts "NVML header own")
  endif()
  list(APPEND parts "OpenCL ${HPR_OPENCL_FROM} (${OpenCL_LIBRARY})")
  list(JOIN parts ", " line)
  message(STATUS "hpr optional parts: ${line}")
endfunction()
