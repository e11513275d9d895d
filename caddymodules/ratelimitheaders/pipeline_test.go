package ratelimitheaders

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	ulule "github.com/ulule/limiter/v3"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/invoicewire/invoicewire/internal/redistest"
)

// The store's increments, sent concurrently through pipelinedScripts, each
// get their own key's total, and the store still reloads its script when
// Redis has lost it (SCRIPT FLUSH, as after a restart).
func TestPipelinedIncrements(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	store, err := redisstore.NewStoreWithOptions(&pipelinedScripts{UniversalClient: srv.Client()}, ulule.StoreOptions{Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	rate := ulule.Rate{Period: time.Minute, Limit: counterLimit}
	tests := []struct {
		desc   string
		before func()
	}{
		{desc: "script loaded", before: func() {}},
		{desc: "script flushed", before: func() { srv.Client().ScriptFlush(ctx) }},
	}
	for round, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			tc.before()
			var wg sync.WaitGroup
			errs := make(chan error, 500)
			for i := range 500 {
				wg.Go(func() {
					// Key i is incremented by i+1 once per round.
					rc, err := store.Increment(ctx, "k"+strconv.Itoa(i), int64(i+1), rate)
					if err != nil {
						errs <- err
						return
					}
					if got, want := counterLimit-rc.Remaining, int64((round+1)*(i+1)); got != want {
						errs <- &countError{key: i, got: got, want: want}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		})
	}
}

type countError struct {
	key       int
	got, want int64
}

func (e *countError) Error() string {
	return "key k" + strconv.Itoa(e.key) + ": total " + strconv.FormatInt(e.got, 10) + ", want " + strconv.FormatInt(e.want, 10)
}
