#!/usr/bin/env bash
# Builds and runs the consumer project in this folder against glass, as ctest's GlassConsumer.* tests
# (cmake/package.cmake) call it:
#   run.sh install|subdirectory CMAKE GENERATOR CC CXX GLASS_SOURCE GLASS_BUILD MODEL SANITIZE
# install: `cmake --install GLASS_BUILD` into a fresh prefix, which is then moved (the package must
#   be relocatable), then the consumer through find_package(glass) and through pkg-config, C++ and C
#   programs both, each run on MODEL.
# subdirectory: the consumer with add_subdirectory(GLASS_SOURCE). That configures glass as a
#   subproject and compiles the consumer's own sources against glass::glass's usage requirements,
#   but does not build glass itself: the library takes several minutes on two cores, and its objects
#   are the same as the install variant's. GLASS_CONSUMER_FULL=1 builds, links and runs it too.
set -euo pipefail
mode=$1 cmake=$2 generator=$3 cc=$4 cxx=$5 source=$6 build=$7 model=$8 sanitize=$9
here=$(cd "$(dirname "$0")" && pwd)

flags=(-G "$generator" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release)
san=()
if [[ "$sanitize" =~ ^(ON|1|TRUE|YES)$ ]]; then
  san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
  flags+=(-DCMAKE_C_FLAGS="${san[*]}" -DCMAKE_CXX_FLAGS="${san[*]}"
          -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined)
fi

start=$SECONDS
step() {
  echo "== [$((SECONDS - start))s] $*"
  "$@"
}
run_both() {
  step "$1/consumer" "$model"
  step "$1/consumer_c" "$model"
}

case "$mode" in
  install)
    work=$build/consumer/install
    rm -rf "$work"
    mkdir -p "$work"
    step "$cmake" --install "$build" --prefix "$work/staging" >"$work.log" 2>&1 || {
      cat "$work.log"
      exit 1
    }
    mv "$work/staging" "$work/prefix"
    prefix=$work/prefix
    for f in include/glass/llm.h include/glass/engine.h include/glass/result.h include/glass/glass.h \
             include/glass/grammar.h include/glass/tools.h include/glass/verify.h include/glass/files.h \
             include/glass/half.h \
             lib/libglass.a lib/cmake/glass/glassConfig.cmake lib/cmake/glass/glassConfigVersion.cmake \
             lib/cmake/glass/glassTargets.cmake lib/pkgconfig/glass.pc; do
      [ -f "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
    done
    step "$cmake" -S "$here" -B "$work/build" "${flags[@]}" -DCMAKE_PREFIX_PATH="$prefix"
    step "$cmake" --build "$work/build" -j 2
    run_both "$work/build"
    if command -v pkg-config >/dev/null; then
      export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
      read -r -a pc <<<"$(pkg-config --cflags --libs glass)"
      step "$cxx" -std=c++20 "${san[@]}" "$here/main.cpp" "${pc[@]}" -o "$work/consumer"
      step "$cc" -std=c99 "${san[@]}" "$here/main.c" "${pc[@]}" -o "$work/consumer_c"
      run_both "$work"
    else
      echo "pkg-config not found: the .pc file is not checked"
    fi
    ;;
  subdirectory)
    work=$build/consumer/subdirectory
    step "$cmake" -S "$here" -B "$work" "${flags[@]}" -DGLASS_SOURCE="$source"
    if [ "${GLASS_CONSUMER_FULL:-0}" = 1 ]; then
      step "$cmake" --build "$work" -j 2 --target consumer consumer_c
      run_both "$work"
    elif [ "$generator" = Ninja ]; then
      step "$cmake" --build "$work" -j 2 --target CMakeFiles/consumer.dir/main.cpp.o \
        CMakeFiles/consumer_c.dir/main.c.o
    else
      step "$cmake" --build "$work" -j 2 --target main.cpp.o main.c.o
    fi
    ;;
  *)
    echo "unknown mode '$mode' (install or subdirectory)"
    exit 2
    ;;
esac
echo "== [$((SECONDS - start))s] done"
