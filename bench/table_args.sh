# table_args.sh — the command line the table scripts share, read by `. table_args.sh "$@"`:
#
#   SCRIPT [--run BUILD] [--data DIR] OUTDIR
#
# The caller sets `me` (its name, for messages), `dataset` (its trace's folder under data/) and
# `root` (the repository). Sets `build` (empty without --run), `out`, and `data`: DIR, else
# BUILD/data/<dataset> with --run, else <root>/build-bench/data/<dataset>, where the build
# decompresses the traces. A flag it does not know gets the usage line and exit status 2.
build=""
data=""
while [ $# -gt 1 ]; do
  case $1 in
    --run) build=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    -*) echo "usage: $me [--run BUILD] [--data DIR] OUTDIR" >&2; exit 2 ;;
    *) break ;;
  esac
done
out=${1:?usage: $me [--run BUILD] [--data DIR] OUTDIR}
if [ -z "$data" ]; then
  if [ -n "$build" ]; then data=$build/data/$dataset; else data=$root/build-bench/data/$dataset; fi
fi
