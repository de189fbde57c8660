# Cross-build for aarch64 Linux with Debian's cross toolchain (g++-aarch64-linux-gnu) against
# the arm64 libraries of dpkg multiarch (/usr/lib/aarch64-linux-gnu), run under qemu-user.
# scripts/test_aarch64.sh installs all of it, builds into build-aarch64 and runs the tests.
#
# Host tools stay the host's: glslangValidator, spirv-val and python3 are found on PATH.
# Libraries, headers and CMake packages are looked up for aarch64 only: CMake searches
# <prefix>/lib/aarch64-linux-gnu, and the x86-64 multiarch folder is ignored so that an
# amd64 package can never be picked by mistake.
# Extra roots (packages unpacked with dpkg -x because they cannot be co-installed with
# their amd64 version, such as libspirv-cross-c-shared-dev) go in VKF_CROSS_ROOTS.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# add_test() runs every test executable through the emulator; the script tests and the
# pipeline-cache test, which start programs themselves, get it from tests/CMakeLists.txt.
# No -L: the arm64 glibc and dynamic loader are installed through multiarch (libc6:arm64,
# /lib/ld-linux-aarch64.so.1), so the programs load the same libraries a Debian arm64
# machine would.
find_program(VKF_QEMU_AARCH64 qemu-aarch64-static qemu-aarch64)
if(VKF_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${VKF_QEMU_AARCH64})
endif()

set(VKF_CROSS_ROOTS "" CACHE STRING "Extra root folders holding aarch64 packages unpacked with dpkg -x")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES VKF_CROSS_ROOTS)
set(CMAKE_FIND_ROOT_PATH ${VKF_CROSS_ROOTS} /) # the extra roots first: they shadow the amd64 copies
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)

# pkg-config (libpcre2-8, libutf8proc): the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
