#!/bin/sh
# Sum the word counts of a finished job: ./sum.sh JOB_ID
ducc results "$1" | awk -F'"result":' 'NF > 1 { n += $2 + 0 } END { print n " words" }'
