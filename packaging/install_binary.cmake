# Installs one ELF file (the CLI, the extender, a Slurm plugin) stripped, with its debug symbols apart:
#   PART=binary: the stripped file, with a .gnu_debuglink to <name>.debug, into DEST_DIR by write-then-rename
#                (slurmctld, slurmd and every client have the plugins mapped; overwriting a mapped .so in place
#                crashes them, rename(2) swaps the directory entry and running processes keep the old inode);
#   PART=debug:  the debug symbols as /usr/lib/debug/<DEST_DIR>/<name>.debug, where gdb looks for them.
# Both honour DESTDIR (ninja install, CPack). Without objcopy the file is installed as built.
# Usage: cmake -DSRC=<file> -DDEST_DIR=<absolute dir> -DPART=binary|debug -DWORK_DIR=<scratch dir>
#              [-DMODE=plugin|program] -P install_binary.cmake
foreach(v SRC DEST_DIR PART WORK_DIR)
  if(NOT ${v})
    message(FATAL_ERROR "install_binary.cmake: ${v} is required")
  endif()
endforeach()
get_filename_component(name "${SRC}" NAME)
find_program(objcopy NAMES objcopy)
file(MAKE_DIRECTORY "${WORK_DIR}")
set(debug_file "${WORK_DIR}/${name}.debug")  # the debuglink records this base name
if(objcopy)
  execute_process(COMMAND "${objcopy}" --only-keep-debug "${SRC}" "${debug_file}" COMMAND_ERROR_IS_FATAL ANY)
endif()

if(PART STREQUAL "debug")
  if(NOT objcopy)
    return()
  endif()
  set(dir "$ENV{DESTDIR}/usr/lib/debug${DEST_DIR}")
  file(MAKE_DIRECTORY "${dir}")
  file(COPY_FILE "${debug_file}" "${dir}/${name}.debug")
  file(CHMOD "${dir}/${name}.debug" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  message(STATUS "Installing: ${dir}/${name}.debug")
  return()
endif()

set(dir "$ENV{DESTDIR}${DEST_DIR}")
file(MAKE_DIRECTORY "${dir}")
string(RANDOM LENGTH 8 suffix)
set(tmp "${dir}/.${name}.${suffix}.tmp")
if(objcopy)
  execute_process(COMMAND "${objcopy}" --strip-unneeded "--add-gnu-debuglink=${debug_file}" "${SRC}" "${tmp}"
                  COMMAND_ERROR_IS_FATAL ANY)
else()
  file(COPY_FILE "${SRC}" "${tmp}")
endif()
if(MODE STREQUAL "plugin")
  file(CHMOD "${tmp}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
else()
  file(CHMOD "${tmp}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
                                  WORLD_EXECUTE)
endif()
file(RENAME "${tmp}" "${dir}/${name}")
message(STATUS "Installing (stripped, atomic rename): ${dir}/${name}")
