#!/bin/sh
# Print the .c files of directory $1 (relative to it), one per line, sorted.
cd "$1" && ls -1 *.c 2>/dev/null | LC_ALL=C sort
