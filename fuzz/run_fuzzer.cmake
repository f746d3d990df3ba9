# cmake -DFUZZER=exe -DSEEDS=dir -DREGRESSIONS=dir -DWORK=dir -DSECONDS=n [-DDICT=file] -P run_fuzzer.cmake
#
# One bounded libFuzzer run, the ctest test of a fuzz target under FG_FUZZ=ON: WORK/corpus is made a
# fresh copy of the seeds (libFuzzer adds what it finds there, never to the source tree), the target
# fuzzes it for SECONDS with the limits below, and crash, leak and timeout reproducers land in WORK as
# crash-*, leak-*, timeout-*; then every seed and regression is run once. Any finding fails the test,
# naming the reproducer; -print_final_stats=1 prints the executions, exec/s and coverage.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
file(GLOB seed_files LIST_DIRECTORIES false ${SEEDS}/*)
if(seed_files)
  file(COPY ${seed_files} DESTINATION ${WORK}/corpus)
endif()
set(dict_arg "")
if(DICT)
  set(dict_arg -dict=${DICT})
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${WORK}/ ${dict_arg} ${WORK}/corpus
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} found a failure (exit ${rc}); the reproducer is in ${WORK}/")
endif()

file(GLOB regression_files LIST_DIRECTORIES false ${REGRESSIONS}/*)
set(inputs ${seed_files} ${regression_files})
if(inputs)
  execute_process(COMMAND ${FUZZER} -timeout=10 -rss_limit_mb=2048 ${inputs} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${FUZZER} fails on a seed or regression input (exit ${rc})")
  endif()
endif()
