// Command checker is a checker program built on Kuberhealthy v2.7.1's own Go checkclient, so tests prove
// that existing Go check images report to khrun unchanged (the client sends the kh-run-uuid header).
//
// Usage: checker [success|fail]
package main

import (
	"fmt"
	"os"

	"github.com/kuberhealthy/kuberhealthy/v2/pkg/checks/external/checkclient"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "fail" {
		err = checkclient.ReportFailure([]string{"go checkclient reported a failure"})
	} else {
		err = checkclient.ReportSuccess()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "report failed:", err)
		os.Exit(1)
	}
	fmt.Println("reported")
}
