# Regenerate the file seeds (GEN OUT) and compare them with the checked-in
# corpus (CORPUS): the journal seeds must be byte-identical (the layout is
# core/journal.h, written by make_seeds itself); the rank files are HDF5 and
# carry no timestamps that vary, but HDF5 may lay them out differently after
# a library upgrade, so only their presence is checked here and their
# loading is checked by make_seeds and fuzz.replay.rankfile.
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${GEN} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_seeds failed (${rc})")
endif()
file(GLOB _seeds RELATIVE ${OUT} ${OUT}/journal/* ${OUT}/rankfile/*)
foreach(s ${_seeds})
  if(NOT EXISTS ${CORPUS}/${s})
    message(FATAL_ERROR "seed ${s} is missing from ${CORPUS}: rerun make_seeds ${CORPUS}")
  endif()
  if(s MATCHES "^journal/")
    file(SHA256 ${OUT}/${s} a)
    file(SHA256 ${CORPUS}/${s} b)
    if(NOT a STREQUAL b)
      message(FATAL_ERROR "seed ${s} differs from the generator's output: rerun make_seeds ${CORPUS}")
    endif()
  endif()
endforeach()
message(STATUS "${CORPUS}: the file seeds are current")
