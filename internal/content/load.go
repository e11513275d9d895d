package content

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// FieldError says which file and which field stopped a load.
type FieldError struct {
	File  string
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Field + ": " + e.Msg
}

// LoadError collects every FieldError of one load, so an editor sees all the
// problems of a tree at once rather than one per run.
type LoadError struct{ Errs []*FieldError }

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "content: %d problem(s):", len(e.Errs))
	for _, fe := range e.Errs {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// MaxAhead is how far ahead of the clock an article's dates may be: a
// margin for clocks and time zones, not a way to schedule publishing.
const MaxAhead = 24 * time.Hour

var (
	countryPattern = regexp.MustCompile(`^[a-z]{2}$`)
	weekFile       = regexp.MustCompile(`^(\d{4})-w(\d{2})\.md$`)
)

// Load reads and validates the content tree rooted at dir.
func Load(dir string) (*Corpus, error) {
	return LoadFS(treeFS(dir))
}

// LoadFS reads and validates a content tree from fsys. It returns either a
// complete Corpus or a *LoadError naming every file and field at fault.
func LoadFS(fsys fs.FS) (*Corpus, error) {
	return loadFS(fsys)
}

func loadFS(fsys fs.FS) (*Corpus, error) {
	var articles []*Article
	c, err := streamFS(fsys, StreamOptions{Publish: func(month []*Article) error {
		articles = append(articles, month...)
		return nil
	}})
	if err != nil {
		return nil, err
	}
	c.Articles = articles
	sort.Slice(c.Articles, func(i, j int) bool {
		ai, aj := c.Articles[i], c.Articles[j]
		if !ai.PublishedAt.Equal(aj.PublishedAt) {
			return ai.PublishedAt.After(aj.PublishedAt)
		}
		return ai.Slug < aj.Slug
	})
	return c, nil
}

type loader struct {
	fsys fs.FS
	errs []*FieldError
	// unchanged, when set, names article files to skip; known names them
	// from their stat alone (StreamOptions).
	unchanged func(path string, info fs.FileInfo, raw []byte) bool
	known     func(path string, info fs.FileInfo) bool
	// pinned are the slugs milestones cite: those articles are always
	// parsed, since a milestone copies their title, path and date.
	pinned map[string]bool
	// buf is the buffer article files are read into, reused: an
	// Article's strings are copies.
	buf []byte
}

func (l *loader) fail(file, field, format string, args ...any) {
	l.errs = append(l.errs, &FieldError{File: file, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) readYAML(name string, into any) {
	b, err := fs.ReadFile(l.fsys, name)
	if err != nil {
		l.fail(name, "", "%v", err)
		return
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(into); err != nil {
		l.fail(name, "", "%s", yamlProblem(b, 1, err))
	}
}

func (l *loader) checkSources(list []*Source) map[string]*Source {
	m := map[string]*Source{}
	for i, s := range list {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case s == nil:
			l.fail("sources.yaml", at, "empty entry")
			continue
		case !ValidSlug(s.Slug):
			l.fail("sources.yaml", at+".slug", "must be lowercase words joined by hyphens, got %q", s.Slug)
		case m[s.Slug] != nil:
			l.fail("sources.yaml", at+".slug", "duplicate %q", s.Slug)
		}
		if strings.TrimSpace(s.Name) == "" {
			l.fail("sources.yaml", at+".name", "required")
		}
		if s.Homepage != "" && !isAbsoluteHTTPURL(s.Homepage) {
			l.fail("sources.yaml", at+".homepage", "must be an absolute http(s) URL, got %q", s.Homepage)
		}
		if s.TrustTier != "" && !slices.Contains(TrustTiers, s.TrustTier) {
			l.fail("sources.yaml", at+".trust_tier", "unknown value %q (allowed: %s)", s.TrustTier, strings.Join(TrustTiers, ", "))
		}
		m[s.Slug] = s
	}
	return m
}

func (l *loader) checkCountries(list []*Country) map[string]*Country {
	m := map[string]*Country{}
	for i, c := range list {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case c == nil:
			l.fail("countries.yaml", at, "empty entry")
			continue
		case !countryPattern.MatchString(c.Code):
			l.fail("countries.yaml", at+".code", "must be two lowercase letters (ISO 3166-1 alpha-2), got %q", c.Code)
		case m[c.Code] != nil:
			l.fail("countries.yaml", at+".code", "duplicate %q", c.Code)
		}
		if strings.TrimSpace(c.Name) == "" {
			l.fail("countries.yaml", at+".name", "required")
		}
		if !slices.Contains(MandateStatuses, c.MandateStatus) {
			l.fail("countries.yaml", at+".mandate_status", "unknown value %q (allowed: %s)", c.MandateStatus, strings.Join(MandateStatuses, ", "))
		}
		m[c.Code] = c
	}
	return m
}

func (l *loader) checkSpecs(list []*Spec) map[string]*Spec {
	m := map[string]*Spec{}
	for i, s := range list {
		at := fmt.Sprintf("[%d]", i)
		switch {
		case s == nil:
			l.fail("specs.yaml", at, "empty entry")
			continue
		case !ValidSlug(s.Slug):
			l.fail("specs.yaml", at+".slug", "must be lowercase words joined by hyphens, got %q", s.Slug)
		case m[s.Slug] != nil:
			l.fail("specs.yaml", at+".slug", "duplicate %q", s.Slug)
		}
		if strings.TrimSpace(s.Name) == "" {
			l.fail("specs.yaml", at+".name", "required")
		}
		if s.URL != "" && !isAbsoluteHTTPURL(s.URL) {
			l.fail("specs.yaml", at+".url", "must be an absolute http(s) URL, got %q", s.URL)
		}
		m[s.Slug] = s
	}
	return m
}

// splitFrontMatter separates "---\n<yaml>\n---\n<body>".
func splitFrontMatter(b []byte) (front, body []byte, ok bool) {
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	if bytes.Contains(b, []byte("\r\n")) { // ReplaceAll copies even when nothing is replaced
		b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	}
	if !bytes.HasPrefix(b, []byte("---\n")) {
		return nil, nil, false
	}
	rest := b[4:]
	end := bytes.Index(rest, []byte("\n---\n"))
	if end < 0 {
		if bytes.HasSuffix(rest, []byte("\n---")) {
			return rest[:len(rest)-4], nil, true
		}
		return nil, nil, false
	}
	return rest[:end+1], rest[end+5:], true
}

// bodyText is strings.TrimSpace(string(body)) + "\n" in one copy.
func bodyText(body []byte) string {
	body = bytes.TrimSpace(body)
	var b strings.Builder
	b.Grow(len(body) + 1)
	b.Write(body)
	b.WriteByte('\n')
	return b.String()
}

// readArticle reads, parses and checks one article file. kept reports a
// file skipped as unchanged (with no article).
// f is what p says (matchArticlePath).
func (l *loader) readArticle(p string, f articleFile, sources map[string]*Source, countries map[string]*Country, specs map[string]*Spec) (a *Article, kept bool) {
	skippable := l.unchanged != nil && !l.pinned[f.slug]
	if skippable && l.known != nil {
		// One stat instead of open, fstat, two reads, close and a hash.
		if info, err := statFile(l.fsys, p); err == nil && l.known(p, info) {
			return nil, true
		}
	}
	raw, info, err := readFileInfo(l.fsys, p, l.buf)
	if err != nil {
		l.fail(p, "", "%v", err)
		return nil, false
	}
	l.buf = raw[:0] // what is kept of the file is copied out of it
	if skippable && l.unchanged(p, info, raw) {
		return nil, true
	}
	return l.parseArticle(p, f, raw, sources, countries, specs), false
}

func (l *loader) parseArticle(p string, f articleFile, raw []byte, sources map[string]*Source, countries map[string]*Country, specs map[string]*Spec) *Article {
	front, body, ok := splitFrontMatter(raw)
	if !ok {
		l.fail(p, "", "missing YAML front matter between --- lines")
		return nil
	}
	var a Article
	// The fast path takes the front matter it is sure of and declines the
	// rest, which yaml.v3 decodes (frontmatter.go).
	if !fastFrontMatter(front, &a) {
		dec := yaml.NewDecoder(bytes.NewReader(front))
		dec.KnownFields(true)
		if err := dec.Decode(&a); err != nil {
			l.failFrontMatter(p, front, err)
			return nil
		}
	}
	a.Body = bodyText(body)
	before := len(l.errs)

	fileSlug := f.slug
	if a.Slug == "" {
		a.Slug = fileSlug
	}
	switch {
	case a.Slug != fileSlug:
		l.fail(p, "slug", "%q does not match the file name %q", a.Slug, fileSlug)
	case !ValidSlug(a.Slug):
		l.fail(p, "slug", "must be at most %d lowercase letters, digits and single hyphens, got %q", MaxSlugLength, a.Slug)
	}
	if strings.TrimSpace(a.Title) == "" {
		l.fail(p, "title", "required")
	}
	if a.Section == "" {
		l.fail(p, "section", "required: one of %s", strings.Join(Sections, ", "))
	} else if !slices.Contains(Sections, a.Section) {
		l.fail(p, "section", "unknown value %q (allowed: %s)", a.Section, strings.Join(Sections, ", "))
	}
	if len(a.Audience) == 0 {
		l.fail(p, "audience", "required: at least one of %s", strings.Join(Audiences, ", "))
	}
	for _, v := range a.Audience {
		if !slices.Contains(Audiences, v) {
			l.fail(p, "audience", "unknown value %q (allowed: %s)", v, strings.Join(Audiences, ", "))
		}
	}
	if a.Countries == nil {
		a.Countries = []string{}
	}
	for _, cc := range a.Countries {
		if countries[cc] == nil {
			l.fail(p, "countries", "unknown country %q (not in countries.yaml)", cc)
		}
	}
	for _, s := range a.Specs {
		if specs[s] == nil {
			l.fail(p, "specs", "unknown spec %q (not in specs.yaml)", s)
		}
	}
	if a.Locale == "" {
		a.Locale = "en"
	}
	// Nothing is published ahead of its date (there is no scheduled
	// publishing): a date past the clock is a typo, which would go out in
	// events that cannot be recalled and withhold Last-Modified until then
	// (docs/decisions.md, "A date ahead of the clock is not sent"). A day's
	// margin allows for clocks and time zones.
	latest := time.Now().Add(MaxAhead)
	ahead := func(field string, t time.Time) {
		if t.After(latest) {
			l.fail(p, field, "%s is in the future (at most %s ahead of the clock; nothing is published ahead of its date)", t.Format(time.RFC3339), MaxAhead)
		}
	}
	if a.PublishedAt.IsZero() {
		l.fail(p, "published_at", "required (RFC 3339 date-time)")
	} else {
		ahead("published_at", a.PublishedAt)
		a.PublishedAt = a.PublishedAt.UTC()
		if want := f.year + "/" + f.month; a.PublishedAt.Format("2006/01") != want {
			l.fail(p, "published_at", "%s is not in %s, the folder the file is in", a.PublishedAt.Format("2006-01-02"), want)
		}
	}
	if a.UpdatedAt != nil {
		u := a.UpdatedAt.UTC()
		a.UpdatedAt = &u
		if u.Before(a.PublishedAt) {
			l.fail(p, "updated_at", "is before published_at")
		}
		ahead("updated_at", u)
	}
	if a.Image != "" && !isAbsoluteHTTPURL(a.Image) && !strings.HasPrefix(a.Image, "/") {
		l.fail(p, "image", "must be an absolute URL or a site path, got %q", a.Image)
	}
	if len(a.Sources) == 0 {
		l.fail(p, "sources", "required: at least one source from sources.yaml")
	}
	for i := range a.Sources {
		c := &a.Sources[i]
		src := sources[c.Source]
		if src == nil {
			l.fail(p, fmt.Sprintf("sources[%d].source", i), "unknown source %q (not in sources.yaml)", c.Source)
			continue
		}
		c.Name = src.Name
		if !isAbsoluteHTTPURL(c.URL) {
			l.fail(p, fmt.Sprintf("sources[%d].url", i), "must be an absolute http(s) URL, got %q", c.URL)
		}
	}
	for i := range a.Corrections {
		c := &a.Corrections[i]
		if c.Date.IsZero() {
			l.fail(p, fmt.Sprintf("corrections[%d].date", i), "required")
			continue
		}
		c.Date = c.Date.UTC()
		if strings.TrimSpace(c.Text) == "" {
			l.fail(p, fmt.Sprintf("corrections[%d].text", i), "required")
		}
		for j, w := range c.Withdraws {
			if strings.TrimSpace(w) == "" {
				l.fail(p, fmt.Sprintf("corrections[%d].withdraws[%d]", i, j), "must not be blank")
			}
		}
		if c.Date.Before(a.PublishedAt) {
			l.fail(p, fmt.Sprintf("corrections[%d].date", i), "is before published_at")
		}
		ahead(fmt.Sprintf("corrections[%d].date", i), c.Date)
		// A correction is an update (docs/decisions.md, retraction and correction): updated_at is at least the
		// latest correction's date.
		if a.UpdatedAt == nil || a.UpdatedAt.Before(c.Date) {
			d := c.Date
			a.UpdatedAt = &d
		}
	}
	if strings.TrimSpace(a.Body) == "" {
		l.fail(p, "body", "the article has no text after the front matter")
	}
	if len(l.errs) > before {
		return nil
	}
	return &a
}

// failFrontMatter reports a front matter that does not decode into an
// Article. yaml.v3 names only a line, and time.Time's parser not even that
// ("parsing time ..."), so each top-level key is decoded again on its own to
// name the field at fault; an editor then sees "published_at: ..." rather
// than a bare parser message.
func (l *loader) failFrontMatter(p string, front []byte, err error) {
	var doc yaml.Node
	if yaml.Unmarshal(front, &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		m := doc.Content[0]
		before := len(l.errs)
		for i := 0; i+1 < len(m.Content); i += 2 {
			if ferr := decodeOneKey[Article](m.Content[i : i+2]); ferr != nil {
				if key, items := m.Content[i], m.Content[i+1]; key.Value == "corrections" && items.Kind == yaml.SequenceNode && l.failCorrections(p, items) {
					continue
				}
				// The front matter starts on the file's second line,
				// after "---": an editor looks for the file's line.
				l.fail(p, m.Content[i].Value, "line %d: %s", m.Content[i].Line+1, decodeProblem(ferr, m.Content[i:i+2]))
			}
		}
		if len(l.errs) > before {
			return
		}
	}
	l.fail(p, "", "front matter: %s", yamlProblem(front, frontMatterLine, err))
}

// failCorrections names the field of the corrections entry that failed to
// decode, corrections[i].date say, with its line in the file; a date that
// is no date is said so in words rather than in the time parser's layout.
// It reports whether it found the field.
func (l *loader) failCorrections(p string, items *yaml.Node) bool {
	found := false
	for j, item := range items.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		for k := 0; k+1 < len(item.Content); k += 2 {
			derr := decodeOneKey[Correction](item.Content[k : k+2])
			if derr == nil {
				continue
			}
			found = true
			key, value := item.Content[k], item.Content[k+1]
			problem := decodeProblem(derr, item.Content[k:k+2])
			var pe *time.ParseError
			if errors.As(derr, &pe) {
				problem = fmt.Sprintf("%q is no date: write YYYY-MM-DD or an RFC 3339 date-time", value.Value)
			}
			l.fail(p, fmt.Sprintf("corrections[%d].%s", j, key.Value), "line %d: %s", key.Line+1, problem)
		}
	}
	return found
}

// decodeOneKey decodes the mapping of one key and its value into a T,
// unknown keys refused, and returns the error: the per-key check of
// failFrontMatter and failCorrections. A pair that does not marshal back
// is no error of its own (the whole document's stands).
func decodeOneKey[T any](pair []*yaml.Node) error {
	one, err := yaml.Marshal(&yaml.Node{Kind: yaml.MappingNode, Content: pair})
	if err != nil {
		return nil
	}
	var v T
	dec := yaml.NewDecoder(bytes.NewReader(one))
	dec.KnownFields(true)
	return dec.Decode(&v)
}

// decodeProblem drops yaml.v3's "unmarshal errors" wrapping and its line
// numbers, which refer to the one-key document decodeOneKey re-decoded from
// pair: a key given twice is named with its first line in the file instead.
func decodeProblem(err error, pair []*yaml.Node) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		if _, rest, ok := strings.Cut(e, ": "); ok && strings.HasPrefix(e, "line ") {
			e = rest
		}
		if m := yamlDuplicate.FindStringSubmatchIndex(e); m != nil {
			if first := firstOfDuplicate(pair[1]); first != nil {
				e = e[:m[2]] + strconv.Itoa(first.Line+1) + e[m[3]:]
			} else {
				e = e[:m[0]]
			}
		}
		msgs = append(msgs, e)
	}
	return strings.Join(msgs, "; ")
}

// firstOfDuplicate is the first occurrence of the first key that a mapping
// within n gives twice, or nil.
func firstOfDuplicate(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		seen := make(map[string]*yaml.Node, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if prev, ok := seen[n.Content[i].Value]; ok {
				return prev
			}
			seen[n.Content[i].Value] = n.Content[i]
		}
	}
	for _, c := range n.Content {
		if first := firstOfDuplicate(c); first != nil {
			return first
		}
	}
	return nil
}

// frontMatterLine is the file's line a front matter starts on, after its
// "---" (splitFrontMatter drops a byte order mark and carriage returns,
// neither of which moves a line).
const frontMatterLine = 2

// yamlProblem words err, which yaml.v3 returned decoding src, with its line
// counted in the file src came from, whose line first src starts on.
//
// A decoding error (an unknown field, a key given twice, a value of the
// wrong type) names the line of its node, counted from 1, so shifting it is
// enough. The line of a syntax error cannot be read off the message:
// yaml.v3 counts it from 0 for the parser's errors and from 1 for the
// scanner's, names the line where the construct at fault began (an unclosed
// flow sequence, the plain scalar a tab interrupts) rather than the line at
// fault, and names none on the first line (decode.go, parser.fail). So it
// is found instead: the line at fault is the first one past the longest
// run of whole lines from the top that still parses. Only a file that
// fails to load pays for the search.
func yamlProblem(src []byte, first int, err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, 0, len(te.Errors))
		for _, e := range te.Errors {
			msgs = append(msgs, shiftLines(e, first-1))
		}
		return strings.Join(msgs, "; ")
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if yaml.Unmarshal(src, new(yaml.Node)) == nil {
		return msg // not a syntax error (an empty document is io.EOF): no line to find
	}
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		msg = msg[m[1]:]
	}
	// ends[i] is the end of line i+1, its newline included.
	var ends []int
	for i, c := range src {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	bad := 1
	for n := len(ends); n > 0; n-- {
		if ends[n-1] == len(src) {
			continue // the whole document, which fails
		}
		if yaml.Unmarshal(src[:ends[n-1]], new(yaml.Node)) == nil {
			bad = n + 1
			break
		}
	}
	return fmt.Sprintf("line %d: %s", bad+first-1, msg)
}

var (
	// yamlLine is how yaml.v3 starts a message with a line.
	yamlLine = regexp.MustCompile(`^line (\d+): `)
	// yamlDuplicate is how yaml.v3 ends its message on a key given twice
	// (decode.go), with the line of the first.
	yamlDuplicate = regexp.MustCompile(` already defined at line (\d+)$`)
)

// shiftLines adds by to the lines a decoding error of yaml.v3 names: the
// one it starts with and, for a key given twice, the first one's.
func shiftLines(msg string, by int) string {
	for _, re := range []*regexp.Regexp{yamlLine, yamlDuplicate} {
		if m := re.FindStringSubmatchIndex(msg); m != nil {
			n, _ := strconv.Atoi(msg[m[2]:m[3]])
			msg = msg[:m[2]] + strconv.Itoa(n+by) + msg[m[3]:]
		}
	}
	return msg
}

func (l *loader) readNewsletters(c *Corpus) {
	entries, err := fs.ReadDir(l.fsys, "newsletters")
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		l.fail("newsletters", "", "%v", err)
		return
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		p := path.Join("newsletters", e.Name())
		m := weekFile.FindStringSubmatch(e.Name())
		if m == nil {
			l.fail(p, "", "newsletter intros are named <yyyy>-w<ww>.md")
			continue
		}
		raw, err := fs.ReadFile(l.fsys, p)
		if err != nil {
			l.fail(p, "", "%v", err)
			continue
		}
		intro := &NewsletterIntro{Week: m[1] + "-w" + m[2]}
		body := raw
		if front, rest, ok := splitFrontMatter(raw); ok {
			var fm struct {
				Title string `yaml:"title"`
			}
			dec := yaml.NewDecoder(bytes.NewReader(front))
			dec.KnownFields(true)
			if err := dec.Decode(&fm); err != nil {
				l.fail(p, "", "front matter: %s", yamlProblem(front, frontMatterLine, err))
				continue
			}
			intro.Title, body = fm.Title, rest
		}
		intro.Body = strings.TrimSpace(string(body))
		c.Newsletters[intro.Week] = intro
	}
}

func isAbsoluteHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
