#!/usr/bin/env bash
# The portability check of vkformer's library archives (the libvkf_*.a of the runtime, the host
# libraries and the shaders; not the tests' or the programs'), of libvkformer.so and of the JNI
# glue libvkformer_jni.so: lists every symbol they leave undefined (nm) and fails on any that
# Android's C library, bionic, lacks at API level 26 (the NDK build's minimum, docs/API.md
# "Android"), and on any desktop-only one (X11, XCB, Wayland, libdrm, Vulkan's window-system
# entry points). Each offender is named with the object that uses it.
# scripts/test_aarch64.sh runs it on the aarch64 cross-build; it works on any build folder.
# usage: scripts/check_portable_symbols.sh [BUILD_DIR]     (default build-aarch64)
#
# The list below is the one place these rules live, one entry per line: extended regular
# expressions, each matched against a whole symbol name and separated by |, then after the last |
# the reason. Only C symbols are listed: C++ names are mangled and come from libstdc++, which the
# NDK's libc++ replaces. Sources: bionic's libc/libc.map.txt (each symbol's "introduced=" API
# level) and docs/status.md ("Missing functions"). Not listed because bionic has them at API
# 26: error/error_at_line (23), mallinfo, malloc_usable_size, getauxval, get_nprocs (23),
# open_memstream/fmemopen (23), mempcpy (23), strchrnul (24), pthread_getname_np,
# nl_langinfo and strtod_l (26).
# Not listed either: symbols that glibc's or libstdc++'s own headers emit for ordinary code
# (__errno_location, __assert_fail, __ctype_b_loc, __isoc99_sscanf, __libc_single_threaded,
# pthread_cond_clockwait from std::condition_variable): the NDK's headers and libc++ emit
# bionic's equivalents, chosen by API level, from the same source.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-aarch64}

rules=$(cat <<'EOF'
mallinfo2|glibc 2.33 only; bionic has mallinfo
malloc_trim|glibc only (not in bionic)
malloc_stats|glibc only (not in bionic); bionic has malloc_info
mtrace|muntrace|mcheck|mprobe|glibc malloc debugging only
secure_getenv|__secure_getenv|glibc only; bionic: getauxval(AT_SECURE) then getenv
gnu_get_libc_version|gnu_get_libc_release|glibc only
program_invocation_name|program_invocation_short_name|glibc only; bionic: getprogname
__libc_[a-z_]+|glibc internals (libstdc++'s __libc_single_threaded is exempt, see above)
strverscmp|rawmemchr|strfry|memfrob|glibc only (not in bionic)
strfrom[dfl]|glibc only (not in bionic); use std::to_chars or fmt
canonicalize_file_name|get_current_dir_name|euidaccess|eaccess|glibc only; use realpath, getcwd, access
fopencookie|glibc only (not in bionic's libc.map.txt); bionic's equivalent is funopen
qsort_r|bionic API 36
backtrace|backtrace_symbols|backtrace_symbols_fd|execinfo.h: bionic API 33
posix_spawnp?|posix_spawn_.*|posix_spawnattr_.*|bionic API 28
glob|globfree|bionic API 28
getrandom|getentropy|bionic API 28
aligned_alloc|bionic API 28; use posix_memalign or aligned operator new
iconv|iconv_open|iconv_close|bionic API 28
reallocarray|timespec_get|getloadavg|bionic API 29
memfd_create|mlock2|renameat2|statx|bionic API 30
pidfd_open|pidfd_getfd|pidfd_send_signal|process_madvise|bionic API 31
preadv2|pwritev2|preadv64v2|pwritev64v2|bionic API 33
close_range|copy_file_range|memset_explicit|bionic API 34
strerrorname_np|epoll_pwait2|_Fork|tzalloc|tzfree|localtime_rz|mktime_z|bionic API 35
pthread_getaffinity_np|pthread_setaffinity_np|sig2str|str2sig|lchmod|mseal|bionic API 36
pthread_cancel|pthread_setcancelstate|pthread_setcanceltype|pthread_testcancel|no thread cancellation in bionic
pthread_mutexattr_[gs]etrobust|pthread_mutex_consistent|no robust mutexes in bionic
pthread_tryjoin_np|pthread_timedjoin_np|pthread_yield|pthread_getattr_default_np|pthread_setattr_default_np|glibc only
getcontext|setcontext|makecontext|swapcontext|no ucontext functions in bionic
shm_open|shm_unlink|not in bionic (SELinux); use ASharedMemory or memfd
aio_[a-z_]+|lio_listio|no <aio.h> in bionic
wordexp|wordfree|no <wordexp.h> in bionic
confstr|crypt|crypt_r|encrypt|setkey|gethostid|a64l|l64a|sockatmark|ualarm|missing from bionic (docs/status.md)
argp_[a-z_]+|_obstack_[a-z_]+|obstack_[a-z_]+|argz_[a-z_]+|envz_[a-z_]+|glibc-only GNU extensions
dlmopen|dlinfo|glibc's libdl only
X[A-Z][A-Za-z0-9_]*|Xlib (X11): desktop only
xcb_[a-z0-9_]+|XCB (X11): desktop only
xkb_[a-z0-9_]+|xkbcommon: desktop only
wl_[a-z0-9_]+|Wayland: desktop only
glX[A-Za-z0-9_]+|GLX (X11): desktop only
drm[A-Z][A-Za-z0-9]*|gbm_[a-z_]+|libdrm/GBM: apps cannot open DRM nodes on Android
vk[A-Za-z0-9]*Xlib[A-Za-z0-9]*|vk[A-Za-z0-9]*Xcb[A-Za-z0-9]*|vk[A-Za-z0-9]*Wayland[A-Za-z0-9]*|vk[A-Za-z0-9]*Win32[A-Za-z0-9]*|window-system Vulkan entry points of desktops
vk[A-Za-z0-9]*Surface[A-Za-z0-9]*|vk[A-Za-z0-9]*Swapchain[A-Za-z0-9]*|presentation: vkformer is compute only
EOF
)

nm_tool=nm
if command -v aarch64-linux-gnu-nm >/dev/null 2>&1 && [ "$(uname -m)" != aarch64 ]; then
  # Debian's host nm reads only x86 objects; the cross binutils read the aarch64 archives.
  case "$(grep -s '^CMAKE_CXX_COMPILER:' "$dir/CMakeCache.txt")" in
    *aarch64*) nm_tool=aarch64-linux-gnu-nm ;;
  esac
fi

mapfile -t archives < <(find "$dir" -name 'libvkf_*.a' -not -path "$dir/tests/*" -not -path "$dir/apps/*" | sort)
if [ ${#archives[@]} -eq 0 ]; then
  echo "check_portable_symbols: no libvkf_*.a under $dir (build it first)" >&2
  exit 2
fi

# libvkformer.so (capi/), the C API an app links, and the Java binding's JNI glue
# (bindings/java, when the build has it), which an Android app loads: their dynamic symbols left
# undefined, which an Android linker must find in bionic (the same rules).
mapfile -t shared < <(find "$dir" \( -name 'libvkformer.so.*' -o -name 'libvkformer_jni.so' \) -type f \
  -not -path "$dir/tests/*" | sort)

# "archive:member: symbol" for each undefined symbol, symbol versions (@GLIBC_2.17) dropped.
listing=$(for a in "${archives[@]}"; do
  "$nm_tool" -A -u "$a" | awk '{ sub(/@.*/, "", $NF); print $1 " " $NF }'
done
for so in "${shared[@]}"; do
  "$nm_tool" -A -D -u "$so" | awk '{ sub(/@.*/, "", $NF); print $1 " " $NF }'
done)
count=$(printf '%s\n' "$listing" | awk 'NF == 2 { print $2 }' | sort -u | wc -l)

offenders=$(awk -v rules="$rules" '
  BEGIN {
    n = split(rules, lines, "\n")
    for (i = 1; i <= n; i++) {
      k = split(lines[i], f, "|")
      reason[i] = f[k]
      pattern[i] = "^("
      for (j = 1; j < k; j++) pattern[i] = pattern[i] (j > 1 ? "|" : "") f[j]
      pattern[i] = pattern[i] ")$"
    }
  }
  NF == 2 {
    object = $1; sub(/:$/, "", object); symbol = $2
    if (symbol == "__libc_single_threaded") next
    for (i = 1; i <= n; i++) {
      if (symbol ~ pattern[i]) { print "  " symbol " in " object ": " reason[i]; break }
    }
  }' <<<"$listing" | sort -u)

echo "check_portable_symbols: ${#archives[@]} archives (${archives[*]#"$dir"/}) and ${#shared[@]} shared" \
  "libraries (${shared[*]#"$dir"/}), $count distinct undefined symbols"
if [ -n "$offenders" ]; then
  echo "check_portable_symbols: symbols that Android (bionic, API 26) or a phone lacks:" >&2
  echo "$offenders" >&2
  exit 1
fi
echo "check_portable_symbols: none is glibc-only, newer than Android API 26 or desktop-only"
