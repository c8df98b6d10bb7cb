// Command empty exits at once. It is the floor of any Go child process, to
// compare idemlab's worker start-up against; the start-up benchmark builds it.
package main

func main() {}
