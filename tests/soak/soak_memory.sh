#!/bin/bash
# soak_memory.sh - the memory test of test_resilience.sh for 5 minutes of stack and process churn
# (some 100,000 distinct stacks): VmRSS stays under the cap and stops growing once the caches are full.
CHURN_SECONDS=${CHURN_SECONDS:-300} exec "$(dirname "$0")/../integration/test_resilience.sh" memory
