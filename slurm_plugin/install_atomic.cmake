# SPDX-License-Identifier: GPL-2.0-or-later
# Installs one plugin by write-then-rename: slurmctld, slurmd and every client dlopen these files, and
# overwriting a mapped .so in place crashes the processes that have it mapped. rename(2) swaps the directory
# entry atomically; running processes keep the old inode.
# Usage: cmake -DSRC=<file> -DDEST_DIR=<dir> [-DEXECUTABLE=ON] -P install_atomic.cmake
if(NOT SRC OR NOT DEST_DIR)
  message(FATAL_ERROR "install_atomic.cmake: SRC and DEST_DIR are required")
endif()
get_filename_component(name "${SRC}" NAME)
if(DEFINED ENV{DESTDIR})
  set(DEST_DIR "$ENV{DESTDIR}${DEST_DIR}")
endif()
file(MAKE_DIRECTORY "${DEST_DIR}")
string(RANDOM LENGTH 8 suffix)
set(tmp "${DEST_DIR}/.${name}.${suffix}.tmp")
file(COPY_FILE "${SRC}" "${tmp}")
if(EXECUTABLE)
  file(CHMOD "${tmp}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
       WORLD_EXECUTE)
else()
  file(CHMOD "${tmp}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endif()
file(RENAME "${tmp}" "${DEST_DIR}/${name}")
message(STATUS "Installed (atomic rename): ${DEST_DIR}/${name}")
