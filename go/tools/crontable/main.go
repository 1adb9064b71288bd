// Command crontable says what Kubernetes v1.34.1 makes of a CronJob schedule, so that
// sidecar/watcher/policy/schedule.py can be compared with the Go code itself
// (tests/go/test_go_crontable.py).
//
// Each line on stdin is a JSON object and each line on stdout answers one:
//
//   - {"expr", "tz", "from", "now", "n"}: {"errors": [...]} with what validation refuses
//     (validateScheduleFormat on create, validateTimeZone: pkg/apis/batch/validation), or
//     {"next": [...]} with up to n (default 5) times robfig/cron v3.0.1 gives after "from" for
//     the schedule the controller builds (formatSchedule + cron.ParseStandard:
//     pkg/controller/cronjob/cronjob_controllerv2.go), stopping at the zero time; with "now",
//     also mostRecentScheduleTime from "from" (pkg/controller/cronjob/utils.go).
//   - {"date": [year, month, day, hour, min, sec], "tz"}: the instant time.Date gives for that
//     wall clock, the call Next resets and steps wall clocks with.
//
// Times are RFC 3339 in UTC. A schedule without a time zone is read in UTC (time.Local is set to
// UTC), as the Python module reads it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

type query struct {
	Expr string  `json:"expr"`
	TZ   *string `json:"tz"`
	From string  `json:"from"`
	Now  string  `json:"now"`
	N    int     `json:"n"`
	Date []int   `json:"date"`
}

type answer struct {
	Errors     []string `json:"errors,omitempty"`
	Next       []string `json:"next"`
	MostRecent *string  `json:"mostRecent,omitempty"`
	Missed     int64    `json:"missed,omitempty"`
	Invalid    string   `json:"invalid,omitempty"`
	Date       string   `json:"date,omitempty"`
}

// parseStandard is cron.ParseStandard with its panic (a "TZ=" schedule without a space slices
// at -1) turned into an error, as the API server's handler would turn it into a 500.
func parseStandard(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return cron.ParseStandard(spec)
}

// validateScheduleFormat as on create (allowTZInSchedule false): the messages only.
func validateScheduleFormat(schedule string) []string {
	var errs []string
	if _, err := parseStandard(schedule); err != nil {
		errs = append(errs, err.Error())
	}
	if strings.Contains(schedule, "TZ") {
		errs = append(errs, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
	}
	return errs
}

var validTimeZoneCharacters = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateTimeZone, the messages only.
func validateTimeZone(timeZone *string) []string {
	if timeZone == nil {
		return nil
	}
	if len(*timeZone) == 0 {
		return []string{"timeZone must be nil or non-empty string"}
	}
	for _, part := range strings.Split(*timeZone, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneCharacters.MatchString(part) {
			return []string{fmt.Sprintf("unknown time zone %s", *timeZone)}
		}
	}
	var errs []string
	if strings.EqualFold(*timeZone, "Local") {
		errs = append(errs, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")
	}
	if _, err := time.LoadLocation(*timeZone); err != nil {
		errs = append(errs, err.Error())
	}
	return errs
}

// mostRecentScheduleTime from earliestTime (no CronJob, no starting deadline), also returning
// numberOfMissedSchedules itself rather than its none/few/many class.
func mostRecentScheduleTime(earliestTime, now time.Time, schedule cron.Schedule) (*time.Time, int64, error) {
	t1 := schedule.Next(earliestTime)
	t2 := schedule.Next(t1)

	if now.Before(t1) {
		return nil, 0, nil
	}
	if now.Before(t2) {
		return &t1, 0, nil
	}
	timeBetweenTwoSchedules := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if timeBetweenTwoSchedules < 1 {
		return nil, 0, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	timeElapsed := int64(now.Sub(t1).Seconds())
	numberOfMissedSchedules := (timeElapsed / timeBetweenTwoSchedules) + 1

	var mostRecentTime time.Time
	potentialEarliest := t1.Add(time.Duration((numberOfMissedSchedules-1-1)*timeBetweenTwoSchedules) * time.Second)
	for t := schedule.Next(potentialEarliest); !t.After(now); t = schedule.Next(t) {
		mostRecentTime = t
	}
	if mostRecentTime.IsZero() {
		return nil, numberOfMissedSchedules, nil
	}
	return &mostRecentTime, numberOfMissedSchedules, nil
}

func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// date answers a "date" query: time.Date(year, month, day, hour, min, sec, 0, tz), the call
// robfig's Next resets and steps wall clocks with.
func date(q query) (answer, error) {
	if len(q.Date) != 6 {
		return answer{}, fmt.Errorf("date needs 6 numbers, got %v", q.Date)
	}
	loc := time.UTC
	if q.TZ != nil {
		var err error
		if loc, err = time.LoadLocation(*q.TZ); err != nil {
			return answer{}, err
		}
	}
	d := q.Date
	return answer{Date: stamp(time.Date(d[0], time.Month(d[1]), d[2], d[3], d[4], d[5], 0, loc))}, nil
}

func answerQuery(q query) (answer, error) {
	if q.Date != nil {
		return date(q)
	}
	var errs []string
	if len(q.Expr) == 0 {
		errs = append(errs, "Required value")
	} else {
		errs = append(errs, validateScheduleFormat(q.Expr)...)
	}
	errs = append(errs, validateTimeZone(q.TZ)...)
	if len(errs) > 0 {
		return answer{Errors: errs}, nil
	}
	spec := q.Expr // formatSchedule
	if q.TZ != nil {
		spec = fmt.Sprintf("TZ=%s %s", *q.TZ, q.Expr)
	}
	sched, err := parseStandard(spec)
	if err != nil {
		return answer{}, fmt.Errorf("validated schedule %q does not parse as %q: %v", q.Expr, spec, err)
	}
	from, err := time.Parse(time.RFC3339Nano, q.From)
	if err != nil {
		return answer{}, err
	}
	from = from.UTC()
	n := q.N
	if n == 0 {
		n = 5
	}
	a := answer{Next: []string{}}
	for t, i := from, 0; i < n; i++ {
		if t = sched.Next(t); t.IsZero() {
			break
		}
		a.Next = append(a.Next, stamp(t))
	}
	if q.Now != "" {
		now, err := time.Parse(time.RFC3339Nano, q.Now)
		if err != nil {
			return answer{}, err
		}
		recent, missed, err := mostRecentScheduleTime(from, now.UTC(), sched)
		if err != nil {
			a.Invalid = err.Error()
		} else if recent != nil {
			s := stamp(*recent)
			a.MostRecent = &s
		}
		a.Missed = missed
	}
	return a, nil
}

func main() {
	time.Local = time.UTC
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var q query
		if err := json.Unmarshal(in.Bytes(), &q); err != nil {
			fmt.Fprintln(os.Stderr, "crontable:", err)
			os.Exit(2)
		}
		a, err := answerQuery(q)
		if err != nil {
			fmt.Fprintln(os.Stderr, "crontable:", err)
			os.Exit(1)
		}
		if err := enc.Encode(a); err != nil {
			fmt.Fprintln(os.Stderr, "crontable:", err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "crontable:", err)
		os.Exit(2)
	}
}
