# Sourced by the experiment scripts: timed NAME COMMAND... runs COMMAND and
# appends to $out/timings.txt how long it took, with the date, the commit of
# $top and the core count, so that every figure carries where it came from.
timed() {
  local name=$1 start end
  shift
  start=$(date +%s)
  "$@"
  end=$(date +%s)
  echo "$name: $((end - start)) s ($(date -u +%F), $(git -C "$top" rev-parse --short HEAD), $(nproc) cores)" \
    | tee -a "$out/timings.txt"
}
