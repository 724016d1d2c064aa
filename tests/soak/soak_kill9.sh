#!/bin/bash
# soak_kill9.sh - the kill -9 test of test_resilience.sh, 30 rounds: every kill leaves a database that
# passes integrity_check and that the next flamed goes on with, losing at most one flush interval.
KILL_ROUNDS=${KILL_ROUNDS:-30} exec "$(dirname "$0")/../integration/test_resilience.sh" kill9
