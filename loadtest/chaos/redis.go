package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
)

// redisKilled is the first fault: Redis killed with SIGKILL (a crash, not a
// shutdown: nothing is flushed on the way out) while readers, iwctl
// retracting and restoring articles, and clients creating webhook
// subscriptions all keep going, then started again on its append-only file.
// Afterwards nothing acknowledged may be missing: every subscription that
// was answered 201 is listed for its owner, every acknowledged retraction
// reached every subscription acknowledged before it began (at least once),
// and every article's state is the one its last acknowledged change left,
// the same in its own answer and in the list (nothing half-written).
func (c *cluster) redisKilled() {
	fmt.Println("\n1. Redis killed (SIGKILL) under read and write load")
	c.warm()
	fmt.Println("  content Redis:", c.redisPersistence())
	var (
		win        clock
		writes     outcomes
		mu         sync.Mutex
		changes    []change
		subs       []subscription
		wg         sync.WaitGroup
		readBefore = &tally{}
		readDown   = &tally{}
		readBack   = &tally{}
		readAfter  = &tally{}
	)
	win.set(winBefore)
	ctx, cancel := context.WithCancel(context.Background())
	// Readers, counted per window.
	readCtx, stopReads := context.WithCancel(context.Background())
	reads := map[window]*tally{winBefore: readBefore, winDown: readDown, winRecovering: readBack, winAfter: readAfter}
	readWG := c.loadInto(readCtx, stablePaths, func() *tally { return reads[win.now()] })

	// The publisher: retract and restore in turn, each retraction with its
	// own reason, so its event is told apart at the receiver.
	slugs := c.slugs(8)
	published := map[string]bool{}
	for _, s := range slugs {
		published[s] = true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; ctx.Err() == nil; k++ {
			slug := slugs[k%len(slugs)]
			ch := change{slug: slug, op: "restore", started: time.Now()}
			args := []string{"restore", slug}
			if published[slug] {
				ch.op, ch.reason = "retract", fmt.Sprintf("chaos-kill-%d", k)
				args = []string{"retract", slug, "--reason", ch.reason}
			}
			w := win.now()
			what, emitted, _ := c.iwctl(args...)
			writes.add(w, "publish "+what)
			ch.acked, ch.emitted = what == "ack", emitted
			if ch.acked {
				published[slug] = ch.op == "restore"
			}
			mu.Lock()
			changes = append(changes, ch)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// The subscribers: new subscriptions to article.retracted, each at its
	// own receiver path, on as many clients as the 25-per-client cap needs.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var acct *account
		for n := 0; ctx.Err() == nil; n++ {
			w := win.now()
			if acct == nil || acct.subs == 25 {
				a, what, _ := c.newAccount(fmt.Sprintf("chaos kill %d", n))
				writes.add(w, "register "+what)
				if a == nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				acct = a
			}
			s := subscription{path: fmt.Sprintf("/hook/kill-%d", n), token: acct.token}
			out, what, _ := c.postStatus("/api/v1/webhooks", acct.token, map[string]any{
				"url": "http://" + c.rcv + s.path, "events": []string{"article.retracted"},
			})
			writes.add(w, "subscribe "+what)
			if what == "ack" {
				s.acked, s.ackedAt = true, time.Now()
				s.id, _ = out["id"].(string)
				acct.subs++
			}
			mu.Lock()
			subs = append(subs, s)
			mu.Unlock()
			time.Sleep(150 * time.Millisecond)
		}
	}()

	time.Sleep(3 * time.Second)
	delayed := c.redisInfo("aof_delayed_fsync")
	win.set(winDown)
	c.stop("redis", syscall.SIGKILL)
	fmt.Println("  Redis killed (SIGKILL); aof_delayed_fsync before the kill:", delayed)
	time.Sleep(4 * time.Second)
	if err := c.startRedis(); err != nil {
		c.expect(false, "Redis restarts: %v", err)
		cancel()
		stopReads()
		wg.Wait()
		readWG.Wait()
		return
	}
	// The first seconds back: the processes reconnect by themselves.
	win.set(winRecovering)
	fmt.Println("  Redis started again on its append-only file")
	time.Sleep(3 * time.Second)
	win.set(winAfter)
	time.Sleep(5 * time.Second)
	cancel()
	wg.Wait()
	stopReads()
	readWG.Wait()

	fmt.Println("  what clients saw, by the window each request began in:")
	for _, w := range []window{winBefore, winDown, winRecovering, winAfter} {
		fmt.Printf("  %-8s reads:  %s\n", w, reads[w])
		fmt.Printf("  %-8s writes: %s\n", w, writes.line(w))
	}
	c.expect(readDown.cachedBad == 0 && readDown.cachedOK > 0, "cached pages no change purged served throughout the outage (%d ok, %d not)", readDown.cachedOK, readDown.cachedBad)
	c.expect(readDown.otherBadErr+readBack.otherBadErr+readAfter.otherBadErr == 0, "every uncached read answered 200 or a JSON error (down: %d JSON errors, %d other)", readDown.otherJSONErr, readDown.otherBadErr)
	c.expect(readDown.hangs == 0, "no read hung (slowest answer %v)", readDown.maxLatency.Round(time.Millisecond))
	c.expect(readAfter.otherOK > 0 && readAfter.otherJSONErr == 0,
		"recovered without restarts: uncached reads 200 again (%d ok, %d JSON errors)", readAfter.otherOK, readAfter.otherJSONErr)
	for _, e := range readDown.examples[:min(3, len(readDown.examples))] {
		fmt.Println("    e.g.", e)
	}
	c.checkNothingLost(changes, subs)
	// Leave every article published for what follows.
	for _, s := range slugs {
		c.iwctl("restore", s)
	}
}

// checkNothingLost compares what was acknowledged with what Redis holds
// and what the receiver got, and prints what was lost.
func (c *cluster) checkNothingLost(changes []change, subs []subscription) {
	var acked []subscription
	byToken := map[string][]subscription{}
	for _, s := range subs {
		if s.acked {
			acked = append(acked, s)
			byToken[s.token] = append(byToken[s.token], s)
		}
	}
	lostSubs := 0
	for tok, ss := range byToken {
		ids, err := c.listSubscriptions(tok)
		if err != nil {
			fmt.Println("    listing a client's subscriptions:", err)
			lostSubs += len(ss)
			continue
		}
		for _, s := range ss {
			if !ids[s.id] {
				lostSubs++
				fmt.Println("    lost subscription", s.id, s.path)
			}
		}
	}
	c.expect(lostSubs == 0, "every acknowledged subscription survived: %d acknowledged, %d lost", len(acked), lostSubs)

	// Every acknowledged retraction must reach every subscription
	// acknowledged before the retraction began.
	want := map[string]bool{}
	retractions := 0
	for _, ch := range changes {
		if !ch.acked || !ch.emitted || ch.op != "retract" {
			continue
		}
		retractions++
		for _, s := range acked {
			if s.ackedAt.Before(ch.started) {
				want[s.path+" article.retracted "+ch.reason] = true
			}
		}
	}
	missing := c.awaitEvents(want, 90*time.Second)
	for _, m := range missing[:min(5, len(missing))] {
		fmt.Println("    not delivered:", m)
	}
	c.expect(len(missing) == 0, "every acknowledged retraction (%d) reached every subscription acknowledged before it: %d (subscription, event) pairs, %d lost",
		retractions, len(want), len(missing))

	// Each article's state is what its last acknowledged change left,
	// unless an unacknowledged change came after it (then either state is
	// possible); its own answer and the list agree.
	listed, err := c.listedSlugs()
	if err != nil {
		c.expect(false, "article list readable after the outage: %v", err)
		return
	}
	type fate struct {
		last   string
		unsure bool
	}
	fates := map[string]*fate{}
	for _, ch := range changes {
		f := fates[ch.slug]
		if f == nil {
			f = &fate{last: "restore"}
			fates[ch.slug] = f
		}
		if ch.acked {
			f.last, f.unsure = ch.op, false
		} else {
			f.unsure = true
		}
	}
	wrong, halfWritten := 0, 0
	for slug, f := range fates {
		status := c.articleStatus(slug)
		if (status == 200) != listed[slug] || (status != 200 && status != 410) {
			halfWritten++
			fmt.Printf("    %s: answered %d but listed=%v\n", slug, status, listed[slug])
			continue
		}
		wantStatus := 200
		if f.last == "retract" {
			wantStatus = 410
		}
		if !f.unsure && status != wantStatus {
			wrong++
			fmt.Printf("    %s: answered %d after an acknowledged %s\n", slug, status, f.last)
		}
	}
	c.expect(wrong == 0, "every article is as its last acknowledged change left it (%d articles, %d changes, %d wrong)", len(fates), len(changes), wrong)
	c.expect(halfWritten == 0, "nothing half-written: each article's answer and the list agree (%d disagree)", halfWritten)
	c.lost += lostSubs + len(missing) + wrong + halfWritten
}

// awaitEvents waits until the receiver has every wanted "<path> <type>
// <reason>" or the limit passes, and returns the missing ones.
func (c *cluster) awaitEvents(want map[string]bool, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for {
		got := c.receivedEvents()
		var missing []string
		for w := range want {
			if !got[w] {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// redisInfo reads one field of INFO persistence from the content Redis.
func (c *cluster) redisInfo(field string) string {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.redisPort), time.Second)
	if err != nil {
		return "unreachable"
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprint(conn, "INFO persistence\r\n")
	buf := make([]byte, 8192)
	n, _ := conn.Read(buf)
	for _, line := range strings.Split(string(buf[:n]), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return "?"
}

// redisPersistence names the content Redis's append-only settings.
func (c *cluster) redisPersistence() string {
	if redisAppendOnly != "yes" {
		return "appendonly " + redisAppendOnly + " (CHAOS_REDIS_APPENDONLY: everything is lost on the kill; make chaos must fail)"
	}
	return fmt.Sprintf("appendonly yes, appendfsync %s (as deploy/ runs it)", redisFsync)
}
