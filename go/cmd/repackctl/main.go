// Command repackctl drives a running sidecar from Go, for operators without Python:
//
//	repackctl [flags] evaluate   -snapshot F | -session ID  [-resource R]...
//	repackctl [flags] plan       -snapshot F | -session ID  -run RUN.json
//	repackctl [flags] filter     -snapshot F | -session ID  -task-uid U | -task TASK.json  [-node N]...
//	repackctl [flags] prioritize -snapshot F | -session ID  -task-uid U | -task TASK.json  [-node N]...
//	repackctl [flags] health
//
// Flags: -target host:port (127.0.0.1:50151), -timeout (30s), -max-message-mib (64),
// -o json|pb (protobuf JSON, or the response's deterministic binary bytes for scripts).
// Snapshots are protobuf JSON or binary (.pb/.bin); RUN.json is a RepackRun or a bare spec.
// Exit codes: 0 answered (health: SERVING), 1 the call failed, 2 bad usage or input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/client"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// usageError is bad input (exit 2), as opposed to a failed call (exit 1).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type common struct {
	target, output string
	timeout        time.Duration
	maxMiB         int
}

func run(args []string, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("repackctl", flag.ContinueOnError)
	global.SetOutput(stderr)
	var c common
	global.StringVar(&c.target, "target", "127.0.0.1:50151", "sidecar address host:port")
	global.DurationVar(&c.timeout, "timeout", 30*time.Second, "deadline of each call")
	global.IntVar(&c.maxMiB, "max-message-mib", 64, "largest response accepted, MiB")
	global.StringVar(&c.output, "o", "json", "output: json or pb (deterministic binary)")
	global.Usage = func() {
		fmt.Fprintln(stderr, "usage: repackctl [flags] evaluate|plan|filter|prioritize|health [command flags]")
		global.PrintDefaults()
	}
	if err := global.Parse(args); err != nil {
		return 2
	}
	if global.NArg() == 0 {
		global.Usage()
		return 2
	}
	if c.output != "json" && c.output != "pb" {
		fmt.Fprintf(stderr, "-o: %q is not json or pb\n", c.output)
		return 2
	}
	var health string
	msg, err := dispatch(c, global.Arg(0), global.Args()[1:], stderr, &health)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, usage.msg)
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		if st, ok := status.FromError(err); ok {
			fmt.Fprintf(stderr, "%s: %s: %s\n", c.target, st.Code(), st.Message())
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", c.target, err)
		}
		return 1
	}
	if msg == nil { // health: the status word, exit 0 only when SERVING (exec probes)
		fmt.Fprintln(stdout, health)
		if health != "SERVING" {
			return 1
		}
		return 0
	}
	if err := write(stdout, msg, c.output); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func write(w io.Writer, msg proto.Message, output string) error {
	var data []byte
	var err error
	if output == "pb" {
		data, err = client.MarshalDeterministic(msg)
	} else {
		data, err = protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(msg)
		data = append(data, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// dispatch runs one command: its response, or nil with *health set for the health command.
func dispatch(c common, command string, args []string, stderr io.Writer, health *string) (proto.Message, error) {
	fs := flag.NewFlagSet("repackctl "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	snapshot := fs.String("snapshot", "", "snapshot file (protobuf JSON, or binary .pb/.bin)")
	session := fs.String("session", "", "session id instead of a snapshot (e.g. latest)")
	var resources, nodes multi
	var runFile, taskUID, taskFile, service *string
	switch command {
	case "evaluate":
		fs.Var(&resources, "resource", "resource to evaluate (repeatable; default every scalar resource)")
	case "plan":
		runFile = fs.String("run", "", "RepackRun (or bare spec) as JSON")
	case "filter", "prioritize":
		taskUID = fs.String("task-uid", "", "a task of the snapshot")
		taskFile = fs.String("task", "", "an inline Task (protobuf JSON)")
		fs.Var(&nodes, "node", "candidate node (repeatable; default every node)")
	case "health":
		service = fs.String("service", client.Service, `health-check service name ("" = the server)`)
	default:
		return nil, usagef("unknown command %q (evaluate, plan, filter, prioritize, health)", command)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usagef("%s: unexpected argument %q", command, fs.Arg(0))
	}
	cl, err := client.Dial(c.target, client.Options{MaxMessageBytes: c.maxMiB * client.MiB, Timeout: c.timeout})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx := context.Background()
	if command == "health" {
		st, err := cl.Health(ctx, *service)
		if err != nil {
			return nil, err
		}
		*health = st.String()
		return nil, nil
	}
	snap, err := source(*snapshot, *session)
	if err != nil {
		return nil, err
	}
	switch command {
	case "evaluate":
		req := &pb.EvaluateRequest{Resources: resources}
		if snap != nil {
			req.Source = &pb.EvaluateRequest_Snapshot{Snapshot: snap}
		} else {
			req.Source = &pb.EvaluateRequest_SessionId{SessionId: *session}
		}
		return cl.Evaluate(ctx, req)
	case "plan":
		if *runFile == "" {
			return nil, usagef("plan: -run is required")
		}
		spec, err := client.LoadRepackSpec(*runFile)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		req := &pb.PlanRequest{Spec: spec}
		if snap != nil {
			req.Source = &pb.PlanRequest_Snapshot{Snapshot: snap}
		} else {
			req.Source = &pb.PlanRequest_SessionId{SessionId: *session}
		}
		return cl.Plan(ctx, req)
	}
	return subjectCall(ctx, cl, command, snap, *session, *taskUID, *taskFile, nodes)
}

// source loads -snapshot, or returns nil for -session; exactly one must be given.
func source(snapshot, session string) (*pb.Snapshot, error) {
	if (snapshot == "") == (session == "") {
		return nil, usagef("give exactly one of -snapshot FILE and -session ID")
	}
	if session != "" {
		return nil, nil
	}
	snap, err := client.LoadSnapshot(snapshot)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return snap, nil
}

func subjectCall(ctx context.Context, cl *client.Client, command string, snap *pb.Snapshot, session, taskUID, taskFile string, nodes []string) (proto.Message, error) {
	if (taskUID == "") == (taskFile == "") {
		return nil, usagef("%s: give exactly one of -task-uid UID and -task FILE", command)
	}
	var task *pb.Task
	if taskFile != "" {
		var err error
		if task, err = client.LoadTask(taskFile); err != nil {
			return nil, usageError{err.Error()}
		}
	}
	if command == "filter" {
		req := &pb.FilterRequest{Nodes: nodes}
		if snap != nil {
			req.Source = &pb.FilterRequest_Snapshot{Snapshot: snap}
		} else {
			req.Source = &pb.FilterRequest_SessionId{SessionId: session}
		}
		if task != nil {
			req.Subject = &pb.FilterRequest_Task{Task: task}
		} else {
			req.Subject = &pb.FilterRequest_TaskUid{TaskUid: taskUID}
		}
		return cl.Filter(ctx, req)
	}
	req := &pb.PrioritizeRequest{Nodes: nodes}
	if snap != nil {
		req.Source = &pb.PrioritizeRequest_Snapshot{Snapshot: snap}
	} else {
		req.Source = &pb.PrioritizeRequest_SessionId{SessionId: session}
	}
	if task != nil {
		req.Subject = &pb.PrioritizeRequest_Task{Task: task}
	} else {
		req.Subject = &pb.PrioritizeRequest_TaskUid{TaskUid: taskUID}
	}
	return cl.Prioritize(ctx, req)
}
