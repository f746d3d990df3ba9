/*
 * cmd_simulate — `fracgpu simulate`, the rightsizing experiment of docs/benchmarks.md §2 from the
 * command line (docs/rightsizing.md):
 *
 *   fracgpu simulate --usage DIR|FILE --policy NAME|FILE [--gpu-memory-gib 80] [--out REPORT.html]
 *                    [--json] [--pods LIST | --half even|odd] [--placement NAME] [--warmup DURATION]
 *
 * --usage: a directory holding the GenTD26 pair (gentd26.h; each file plain, .xz or .gz), or one
 * file in the combined form. --policy: a built-in GPUPolicy's name (crds/builtin.h) or a YAML or
 * JSON file holding a GPUPolicy (or only its spec), decoded and validated as the operator does.
 * --pods: pods by hash, hash prefix or position, comma-separated; --half: the pods at even or odd
 * positions in hash order (the two halves of the held-out experiment). --placement: the scheduler's
 * placement policy (default bestfit: the operator's own, fracgpu, packs these one-GPU capacity nodes
 * no tighter here and takes about a thousand times as long per cycle). --warmup: how long from the
 * trace's start is replayed but not measured (simulate.h; default the policy's minHistory).
 *
 * Prints the measures (simulate.h) as `key value` lines, or one JSON object with --json; with --out
 * also writes the HTML report (report_html.h). A progress bar goes to stderr when it is a terminal.
 * Exit status 0; 2 for bad usage or bad input (unknown policy, missing or malformed files), with a
 * message on stderr; 1 when the report cannot be written.
 */
#ifndef FG_RIGHTSIZING_SIMULATE_CMD_SIMULATE_H
#define FG_RIGHTSIZING_SIMULATE_CMD_SIMULATE_H

/* argv[0] is "simulate". Returns the exit status. */
int fg_cmd_simulate(int argc, char **argv);

#endif
