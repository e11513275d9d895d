package logging

import "time"

// SetRedisLoggerClock sets l's clock.
func SetRedisLoggerClock(l *RedisLogger, now func() time.Time) { l.now = now }
