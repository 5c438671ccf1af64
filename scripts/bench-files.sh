# Sourced by the side-by-side scripts: makes the random-weight model files named in $files in $dir
# with $glass (synth at the shape's f16, then quantize; byte-identical to llama-quantize's output).
# Names are SHAPE-TYPE: SHAPE smollm2 (SmolLM2-135M), l1b (Llama-3.2-1B), qwen (Qwen2.5-0.5B-like),
# e4b or e2b (Gemma 3n E4B / E2B's text model), g4e4b or g4e2b (Gemma 4 E4B / E2B-like), oss20b (gpt-oss-20b, its experts MXFP4 whatever
# TYPE: use oss20b-f16), smollm3 (SmolLM3-3B), lfm2 (LFM2-1.2B), lfm2s
# (LFM2-350M), q35 (Qwen3.5-2B-like, cmd_synth.cpp says which sizes are assumed), TYPE any
# `glass quantize` type.
make_file() {  # shape type name
  local f16="$dir/$3-f16.gguf"
  [ -f "$f16" ] || "$glass" synth --shape "$1" --type f16 -o "$f16"
  [ "$2" = f16 ] || [ -f "$dir/$3-$2.gguf" ] || "$glass" quantize "$f16" "$dir/$3-$2.gguf" "$2"
}
make_files() {
  mkdir -p "$dir"
  local f name shape
  for f in $files; do
    name=${f%%-*}
    case "$name" in
      l1b) shape=llama-1b ;;
      qwen) shape=qwen2.5-0.5b ;;
      q35) shape=qwen3.5-2b ;;
      e4b) shape=gemma3n-e4b ;;
      e2b) shape=gemma3n-e2b ;;
      g4e4b) shape=gemma4-e4b ;;
      g4e2b) shape=gemma4-e2b ;;
      oss20b) shape=gpt-oss-20b ;;
      smollm3) shape=smollm3-3b ;;
      lfm2) shape=lfm2-1.2b ;;
      lfm2s) shape=lfm2-350m ;;
      *) shape=smollm2-135m ;;
    esac
    make_file "$shape" "${f#*-}" "$name"
  done
}
