//go:build race

package review

// raceEnabled says the test binary, and so every worker it re-executes,
// runs under the race detector, which makes each process start slowly.
const raceEnabled = true
