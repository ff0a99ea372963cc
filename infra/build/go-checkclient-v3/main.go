// Command checker is a checker program built on Kuberhealthy v3.0.0's own Go checkclient
// (github.com/kuberhealthy/kuberhealthy/v3/pkg/checkclient), so tests prove that v3 check images report to
// khrun unchanged: the client insists that KH_REPORTING_URL's path is exactly /check and sends the run's
// UUID in the kh-run-uuid header.
//
// Usage: checker success [DELAY] | fail MESSAGE | silent
//
// success waits DELAY (a Go duration, default none) before it reports.
//
// silent reports nothing and stays up until KH_CHECK_RUN_DEADLINE has passed, as a hung check would.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/kuberhealthy/kuberhealthy/v3/pkg/checkclient"
)

func main() {
	mode := "success"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	var err error
	switch mode {
	case "success":
		if len(os.Args) > 2 {
			delay, parseErr := time.ParseDuration(os.Args[2])
			if parseErr != nil {
				fmt.Fprintln(os.Stderr, "bad delay:", parseErr)
				os.Exit(2)
			}
			time.Sleep(delay)
		}
		err = checkclient.ReportSuccess()
	case "fail":
		message := "v3 checkclient reported a failure"
		if len(os.Args) > 2 {
			message = os.Args[2]
		}
		err = checkclient.ReportFailure([]string{message})
	case "silent":
		deadline, deadlineErr := checkclient.GetDeadline()
		if deadlineErr != nil {
			fmt.Fprintln(os.Stderr, "no deadline:", deadlineErr)
			os.Exit(2)
		}
		time.Sleep(time.Until(deadline) + time.Minute)
		return
	default:
		fmt.Fprintln(os.Stderr, "usage: checker success [DELAY] | fail MESSAGE | silent")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "report failed:", err)
		os.Exit(1)
	}
	fmt.Println("reported")
}
