package content

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// fixtureArticle is the one article of testdata/valid; every case below
// starts from that tree and breaks one thing.
const fixtureArticle = "articles/2025/12/fixture-article.md"

// validTree copies testdata/valid into memory so a case can edit it without
// touching the files on disk.
func validTree(t *testing.T) fstest.MapFS {
	t.Helper()
	src := os.DirFS("testdata/valid")
	m := fstest.MapFS{}
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		m[p] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		t.Fatalf("reading testdata/valid: %v", err)
	}
	return m
}

// replace returns an edit that swaps old for new in file, and fails the test
// when old is not there (a case that edits nothing would pass for the wrong
// reason).
func replace(file, old, new string) func(*testing.T, fstest.MapFS) {
	return func(t *testing.T, fsys fstest.MapFS) {
		t.Helper()
		f := fsys[file]
		if f == nil || !strings.Contains(string(f.Data), old) {
			t.Fatalf("fixture %s does not contain %q", file, old)
		}
		fsys[file] = &fstest.MapFile{Data: []byte(strings.Replace(string(f.Data), old, new, 1))}
	}
}

// moveFixture returns an edit that dates the fixture article at and moves its
// file to that month's folder, as an editor would.
func moveFixture(at time.Time) func(*testing.T, fstest.MapFS) {
	return func(t *testing.T, fsys fstest.MapFS) {
		t.Helper()
		f := fsys[fixtureArticle]
		stamp := at.UTC().Truncate(time.Second).Format(time.RFC3339)
		data := strings.Replace(string(f.Data), "published_at: 2025-12-02T09:00:00Z", "published_at: "+stamp, 1)
		delete(fsys, fixtureArticle)
		fsys["articles/"+at.UTC().Format("2006/01")+"/fixture-article.md"] = &fstest.MapFile{Data: []byte(data)}
	}
}

func TestLoadFSValidTree(t *testing.T) {
	c, err := LoadFS(validTree(t))
	if err != nil {
		t.Fatalf("LoadFS(testdata/valid): %v", err)
	}
	if len(c.Articles) != 1 {
		t.Fatalf("got %d articles, want 1", len(c.Articles))
	}
	a := c.Articles[0]
	if a.Slug != "fixture-article" {
		t.Errorf("slug = %q, want the file name %q", a.Slug, "fixture-article")
	}
	if a.Sources[0].Name != "KPMG TaxNewsFlash" {
		t.Errorf("citation name = %q, want it filled in from sources.yaml", a.Sources[0].Name)
	}
	if a.Locale != "en" {
		t.Errorf("locale = %q, want the default %q", a.Locale, "en")
	}
	if got := c.Countries[0].Aliases; strings.Join(got, "|") != "Belgian|Belgique" {
		t.Errorf("country aliases = %q, want them from aliases.yaml", got)
	}
	if got := c.Specs[0].Aliases; strings.Join(got, "|") != "BIS Billing" {
		t.Errorf("spec aliases = %q, want them from aliases.yaml", got)
	}
	if len(c.Synonyms) != 2 || strings.Join(c.Synonyms[0], "|") != "invoice|bill" {
		t.Errorf("synonyms = %q, want aliases.yaml's terms", c.Synonyms)
	}
	m := c.Countries[0].Milestones[0]
	if m.SourceName != "KPMG TaxNewsFlash" {
		t.Errorf("milestone source name = %q, want it found in sources.yaml by the URL's host", m.SourceName)
	}
	if m.Precision != "day" {
		t.Errorf("milestone precision = %q, want the default %q", m.Precision, "day")
	}
	want := ArticleRef{Slug: "fixture-article", Title: "A fixture article", Path: "/2025/12/fixture-article", Updated: a.PublishedAt}
	if len(m.Reports) != 1 || m.Reports[0] != want {
		t.Errorf("milestone reports = %+v, want [%+v]", m.Reports, want)
	}
	if id := m.ID("be"); id != "be-2026-01-01-issue-receive" {
		t.Errorf("milestone ID = %q, want be-2026-01-01-issue-receive", id)
	}
}

func TestLoadFSRejects(t *testing.T) {
	testCases := []struct {
		desc      string
		edit      func(*testing.T, fstest.MapFS)
		wantFile  string
		wantField string
	}{
		{
			desc:      "missing title",
			edit:      replace(fixtureArticle, "title: A fixture article\n", ""),
			wantFile:  fixtureArticle,
			wantField: "title",
		},
		{
			desc:      "missing published_at",
			edit:      replace(fixtureArticle, "published_at: 2025-12-02T09:00:00Z\n", ""),
			wantFile:  fixtureArticle,
			wantField: "published_at",
		},
		{
			desc:      "missing sources",
			edit:      replace(fixtureArticle, "sources:\n  - source: kpmg-tnf\n    url: https://kpmg.com/us/en/taxnewsflash/news/2025/12/fixture.html\n", ""),
			wantFile:  fixtureArticle,
			wantField: "sources",
		},
		{
			desc:      "published_at in the future",
			edit:      moveFixture(time.Now().Add(3 * MaxAhead)),
			wantFile:  "articles/" + time.Now().Add(3*MaxAhead).UTC().Format("2006/01") + "/fixture-article.md",
			wantField: "published_at",
		},
		{
			desc:      "updated_at in the future",
			edit:      replace(fixtureArticle, "published_at: 2025-12-02T09:00:00Z\n", "published_at: 2025-12-02T09:00:00Z\nupdated_at: 2062-11-28T12:00:00Z\n"),
			wantFile:  fixtureArticle,
			wantField: "updated_at",
		},
		{
			desc:      "a correction dated in the future",
			edit:      replace(fixtureArticle, "published_at: 2025-12-02T09:00:00Z\n", "published_at: 2025-12-02T09:00:00Z\ncorrections:\n  - date: 2062-11-28T12:00:00Z\n    text: Typo-dated correction.\n"),
			wantFile:  fixtureArticle,
			wantField: "corrections[0].date",
		},
		{
			desc:      "missing audience",
			edit:      replace(fixtureArticle, "audience: [biz]\n", ""),
			wantFile:  fixtureArticle,
			wantField: "audience",
		},
		{
			desc:      "unknown section",
			edit:      replace(fixtureArticle, "section: mandates", "section: opinion"),
			wantFile:  fixtureArticle,
			wantField: "section",
		},
		{
			desc:      "unknown audience",
			edit:      replace(fixtureArticle, "audience: [biz]", "audience: [biz, cfo]"),
			wantFile:  fixtureArticle,
			wantField: "audience",
		},
		{
			desc:      "unknown country",
			edit:      replace(fixtureArticle, "countries: [be]", "countries: [be, zz]"),
			wantFile:  fixtureArticle,
			wantField: "countries",
		},
		{
			desc:      "uppercase country code is not in countries.yaml",
			edit:      replace(fixtureArticle, "countries: [be]", "countries: [BE]"),
			wantFile:  fixtureArticle,
			wantField: "countries",
		},
		{
			desc:      "unknown source",
			edit:      replace(fixtureArticle, "source: kpmg-tnf", "source: some-blog"),
			wantFile:  fixtureArticle,
			wantField: "sources[0].source",
		},
		{
			desc:      "citation without an absolute URL",
			edit:      replace(fixtureArticle, "url: https://kpmg.com/us/en/taxnewsflash/news/2025/12/fixture.html", "url: /news/fixture.html"),
			wantFile:  fixtureArticle,
			wantField: "sources[0].url",
		},
		{
			desc:      "unknown spec",
			edit:      replace(fixtureArticle, "specs: [peppol-bis-billing-3]", "specs: [peppol-bis-billing-4]"),
			wantFile:  fixtureArticle,
			wantField: "specs",
		},
		{
			desc:      "malformed published_at",
			edit:      replace(fixtureArticle, "published_at: 2025-12-02T09:00:00Z", "published_at: 02/12/2025 09:00"),
			wantFile:  fixtureArticle,
			wantField: "published_at",
		},
		{
			desc:      "published_at with an impossible month",
			edit:      replace(fixtureArticle, "published_at: 2025-12-02T09:00:00Z", "published_at: 2025-13-02T09:00:00Z"),
			wantFile:  fixtureArticle,
			wantField: "published_at",
		},
		{
			desc:      "published_at outside the folder's month",
			edit:      replace(fixtureArticle, "published_at: 2025-12-02T09:00:00Z", "published_at: 2025-11-30T09:00:00Z"),
			wantFile:  fixtureArticle,
			wantField: "published_at",
		},
		{
			desc:      "published_at outside the folder's month once converted to UTC",
			edit:      replace(fixtureArticle, "published_at: 2025-12-02T09:00:00Z", "published_at: 2025-12-01T00:30:00+02:00"),
			wantFile:  fixtureArticle,
			wantField: "published_at",
		},
		{
			desc: "malformed correction date",
			edit: replace(fixtureArticle, "---\nBody text.",
				"corrections:\n  - date: yesterday\n    text: An earlier version misstated the date.\n---\nBody text."),
			wantFile:  fixtureArticle,
			wantField: "corrections[0].date",
		},
		{
			desc: "correction dated before publication",
			edit: replace(fixtureArticle, "---\nBody text.",
				"corrections:\n  - date: 2025-12-01T09:00:00Z\n    text: An earlier version misstated the date.\n---\nBody text."),
			wantFile:  fixtureArticle,
			wantField: "corrections[0].date",
		},
		{
			desc:      "unknown front matter field",
			edit:      replace(fixtureArticle, "kicker: Fixture", "kicker: Fixture\nauthor: Someone"),
			wantFile:  fixtureArticle,
			wantField: "author",
		},
		{
			desc: "duplicate slug in another month",
			edit: func(t *testing.T, fsys fstest.MapFS) {
				again := strings.Replace(string(fsys[fixtureArticle].Data), "2025-12-02T09:00:00Z", "2026-01-05T09:00:00Z", 1)
				fsys["articles/2026/01/fixture-article.md"] = &fstest.MapFile{Data: []byte(again)}
			},
			// WalkDir visits 2025/12 before 2026/01, so the later file is
			// the one named.
			wantFile:  "articles/2026/01/fixture-article.md",
			wantField: "slug",
		},
		{
			desc:      "front matter slug that differs from the file name",
			edit:      replace(fixtureArticle, "title: A fixture article", "slug: another-slug\ntitle: A fixture article"),
			wantFile:  fixtureArticle,
			wantField: "slug",
		},
		{
			desc:      "aliases for a country that is not tracked",
			edit:      replace("aliases.yaml", "  be: [Belgian, Belgique]", "  be: [Belgian, Belgique]\n  zz: [Zedland]"),
			wantFile:  "aliases.yaml",
			wantField: "countries.zz",
		},
		{
			desc:      "a tracked country without aliases",
			edit:      replace("aliases.yaml", "  be: [Belgian, Belgique]\n", ""),
			wantFile:  "aliases.yaml",
			wantField: "countries.be",
		},
		{
			desc:      "a tracked spec without aliases",
			edit:      replace("aliases.yaml", "  peppol-bis-billing-3: [BIS Billing]\n", ""),
			wantFile:  "aliases.yaml",
			wantField: "specs.peppol-bis-billing-3",
		},
		{
			desc:      "one alias for a country and a spec",
			edit:      replace("aliases.yaml", "[BIS Billing]", "[BIS Billing, belgian]"),
			wantFile:  "aliases.yaml",
			wantField: "specs.peppol-bis-billing-3[1]",
		},
		{
			desc:      "a word in two synonym groups",
			edit:      replace("aliases.yaml", "[company, firm]", "[company, Bill]"),
			wantFile:  "aliases.yaml",
			wantField: "terms[1][1]",
		},
		{
			desc:      "a synonym group of one word",
			edit:      replace("aliases.yaml", "[company, firm]", "[company]"),
			wantFile:  "aliases.yaml",
			wantField: "terms[1]",
		},
		{
			desc:      "unknown mandate_status",
			edit:      replace("countries.yaml", "mandate_status: live", "mandate_status: mandatory"),
			wantFile:  "countries.yaml",
			wantField: "[0].mandate_status",
		},
		{
			desc:      "unknown trust_tier",
			edit:      replace("sources.yaml", "trust_tier: advisory", "trust_tier: blog"),
			wantFile:  "sources.yaml",
			wantField: "[0].trust_tier",
		},
		{
			desc:      "milestone date not written YYYY-MM-DD",
			edit:      replace("countries.yaml", "date: 2026-01-01", "date: 2026-1-1"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].date",
		},
		{
			desc:      "milestone date that is no calendar day",
			edit:      replace("countries.yaml", "date: 2026-01-01", "date: 2026-02-30"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].date",
		},
		{
			desc:      "milestone known to the month but not written on its first day",
			edit:      replace("countries.yaml", "date: 2026-01-01", "date: 2026-01-15\n      precision: month"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].date",
		},
		{
			desc:      "unknown milestone precision",
			edit:      replace("countries.yaml", "date: 2026-01-01", "date: 2026-01-01\n      precision: week"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].precision",
		},
		{
			desc:      "unknown milestone status",
			edit:      replace("countries.yaml", "status: in-force", "status: live"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].status",
		},
		{
			desc:      "unknown obligation",
			edit:      replace("countries.yaml", "obligation: [issue, receive]", "obligation: [issue, pay]"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].obligation",
		},
		{
			desc:      "milestone without obligation",
			edit:      replace("countries.yaml", "      obligation: [issue, receive]\n", ""),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].obligation",
		},
		{
			desc:      "milestone without scope",
			edit:      replace("countries.yaml", "      scope: Every Belgian business, for domestic B2B invoices.\n", ""),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].scope",
		},
		{
			desc:      "milestone source on no registered publisher's site",
			edit:      replace("countries.yaml", "source: https://kpmg.com/us/en/taxnewsflash/news/2025/12/fixture.html", "source: https://kpmg.com.evil.example/fixture.html"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].source",
		},
		{
			desc:      "milestone source that is not an absolute URL",
			edit:      replace("countries.yaml", "source: https://kpmg.com/us/en/taxnewsflash/news/2025/12/fixture.html", "source: kpmg-tnf"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].source",
		},
		{
			desc:      "milestone without article",
			edit:      replace("countries.yaml", "articles: [fixture-article]", "articles: []"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].articles",
		},
		{
			desc:      "milestone citing an unknown article",
			edit:      replace("countries.yaml", "articles: [fixture-article]", "articles: [no-such-article]"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].articles",
		},
		{
			desc:      "milestone citing an article about another country",
			edit:      replace(fixtureArticle, "countries: [be]", "countries: []"),
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[0].articles",
		},
		{
			desc: "two milestones with the same country, date and obligation",
			edit: func(t *testing.T, fsys fstest.MapFS) {
				b := string(fsys["countries.yaml"].Data)
				i := strings.Index(b, "    - date:")
				fsys["countries.yaml"] = &fstest.MapFile{Data: []byte(b + strings.Replace(b[i:], "[issue, receive]", "[receive, issue]", 1))}
			},
			wantFile:  "countries.yaml",
			wantField: "[0].milestones[1]",
		},

		{
			desc:      "uppercase country code in countries.yaml",
			edit:      replace("countries.yaml", "code: be", "code: BE"),
			wantFile:  "countries.yaml",
			wantField: "[0].code",
		},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			fsys := validTree(t)
			tc.edit(t, fsys)

			c, err := LoadFS(fsys)
			if err == nil {
				t.Fatalf("LoadFS accepted the tree (%d articles); want an error on %s %s", len(c.Articles), tc.wantFile, tc.wantField)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error is %T (%v), want *LoadError", err, err)
			}
			for _, fe := range le.Errs {
				if fe.File == tc.wantFile && fe.Field == tc.wantField {
					if !strings.Contains(err.Error(), tc.wantFile+": "+tc.wantField+": ") {
						t.Errorf("message %q does not name %s and %s", err, tc.wantFile, tc.wantField)
					}
					return
				}
			}
			t.Errorf("no error on file %q field %q; got:\n%v", tc.wantFile, tc.wantField, err)
		})
	}
}

// TestLoadFSMessages checks the words of an error an editor acts on: the
// line is the file's (the front matter starts on its second line), and a
// field left out is "required".
func TestLoadFSMessages(t *testing.T) {
	testCases := []struct {
		desc    string
		edit    func(*testing.T, fstest.MapFS)
		want    string
		notWant string // what no message may say
	}{
		{desc: "a cited article that fails is not also an unknown article", edit: replace(fixtureArticle, "section: mandates\n", ""),
			want: fixtureArticle + ": section: required", notWant: "unknown article"},
		{desc: "a bad date names the file's line", edit: replace(fixtureArticle, "2025-12-02T09:00:00Z", "2025-13-02T09:00:00Z"),
			want: fixtureArticle + ": published_at: line 10: "},
		{desc: "an unknown key names the file's line", edit: replace(fixtureArticle, "section: mandates\n", "section: mandates\nsektion: mandates\n"),
			want: fixtureArticle + ": sektion: line 6: "},
		{desc: "a correction's bad date names the entry, the field and the file's line",
			edit: replace(fixtureArticle, "section: mandates\n", "section: mandates\ncorrections:\n  - date: 2025-12-40\n    text: A figure was wrong.\n"),
			want: fixtureArticle + `: corrections[0].date: line 7: "2025-12-40" is no date`},
		{desc: "a missing section is required", edit: replace(fixtureArticle, "section: mandates\n", ""),
			want: fixtureArticle + ": section: required"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			fsys := validTree(t)
			tc.edit(t, fsys)
			_, err := LoadFS(fsys)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one containing %q", err, tc.want)
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("err = %v; want none saying %q", err, tc.notWant)
			}
		})
	}
}

// TestLoadFSYAMLErrorLines checks that a file YAML cannot read names the
// line of the file at fault, whatever the kind of error: yaml.v3 counts a
// front matter's lines from its own start, the parser's from 0 and the
// scanner's from 1, and names the line a construct began rather than the
// one at fault.
func TestLoadFSYAMLErrorLines(t *testing.T) {
	testCases := []struct {
		desc string
		edit func(*testing.T, fstest.MapFS)
		want string
	}{
		{desc: "front matter: bad indentation", edit: replace(fixtureArticle, "kicker: Fixture\n", "kicker: Fixture\n  dek: x\n"),
			want: fixtureArticle + ": front matter: line 4: mapping values are not allowed in this context"},
		{desc: "front matter: unclosed quote", edit: replace(fixtureArticle, "kicker: Fixture\n", "kicker: 'Fixture\n"),
			want: fixtureArticle + ": front matter: line 3: found unexpected end of stream"},
		{desc: "front matter: tab in the indentation", edit: replace(fixtureArticle, "kicker: Fixture\n", "kicker: Fixture\n\tdek: x\n"),
			want: fixtureArticle + ": front matter: line 4: found a tab character that violates indentation"},
		{desc: "front matter: mapping value not allowed", edit: replace(fixtureArticle, "kicker: Fixture\n", "kicker: Fixture: yes\n"),
			want: fixtureArticle + ": front matter: line 3: mapping values are not allowed in this context"},
		{desc: "front matter: unclosed flow sequence", edit: replace(fixtureArticle, "tags: [fixture]\n", "tags: [fixture\n"),
			want: fixtureArticle + ": front matter: line 8: did not find expected ',' or ']'"},
		{desc: "front matter: error on its first line", edit: replace(fixtureArticle, "title: A fixture article\n", "title: A: fixture article\n"),
			want: fixtureArticle + ": front matter: line 2: mapping values are not allowed in this context"},
		{desc: "front matter: duplicate key", edit: replace(fixtureArticle, "section: mandates\n", "section: mandates\nkicker: Again\n"),
			want: fixtureArticle + `: front matter: line 6: mapping key "kicker" already defined at line 3`},
		{desc: "front matter: duplicate key in a nested mapping", edit: replace(fixtureArticle, "    url: https://kpmg.com/us/en/taxnewsflash/news/2025/12/fixture.html\n", "    url: https://kpmg.com/us/en/taxnewsflash/news/2025/12/fixture.html\n    source: kpmg-tnf\n"),
			want: fixtureArticle + `: sources: line 11: mapping key "source" already defined at line 12`},
		{desc: "front matter: unknown field", edit: replace(fixtureArticle, "section: mandates\n", "section: mandates\nauthor: Someone\n"),
			want: fixtureArticle + ": author: line 6: field author not found in type content.Article"},
		{desc: "registry: bad indentation", edit: replace("sources.yaml", "  name: KPMG TaxNewsFlash\n", "  name: KPMG TaxNewsFlash\n   x: y\n"),
			want: "sources.yaml: line 3: mapping values are not allowed in this context"},
		{desc: "registry: unclosed quote", edit: replace("sources.yaml", "  name: KPMG TaxNewsFlash\n", "  name: \"KPMG TaxNewsFlash\n"),
			want: "sources.yaml: line 2: found unexpected end of stream"},
		{desc: "registry: tab in the indentation", edit: replace("sources.yaml", "  name: KPMG TaxNewsFlash\n", "  name: KPMG TaxNewsFlash\n\thomepage: x\n"),
			want: "sources.yaml: line 3: found a tab character that violates indentation"},
		{desc: "registry: mapping value not allowed", edit: replace("sources.yaml", "  name: KPMG TaxNewsFlash\n", "  name: KPMG: TaxNewsFlash\n"),
			want: "sources.yaml: line 2: mapping values are not allowed in this context"},
		{desc: "registry: unclosed flow sequence", edit: replace("countries.yaml", "obligation: [issue, receive]\n", "obligation: [issue, receive\n"),
			want: "countries.yaml: line 9: did not find expected ',' or ']'"},
		{desc: "registry: error on its first line", edit: replace("sources.yaml", "- slug: kpmg-tnf\n", "- slug: kpmg: tnf\n"),
			want: "sources.yaml: line 1: mapping values are not allowed in this context"},
		{desc: "registry: duplicate key", edit: replace("sources.yaml", "  trust_tier: advisory\n", "  trust_tier: advisory\n  name: Again\n"),
			want: `sources.yaml: line 5: mapping key "name" already defined at line 2`},
		{desc: "registry: unknown field", edit: replace("sources.yaml", "  trust_tier: advisory\n", "  trust_tier: advisory\n  author: Someone\n"),
			want: "sources.yaml: line 5: field author not found in type content.Source"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			fsys := validTree(t)
			tc.edit(t, fsys)
			_, err := LoadFS(fsys)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v; want a *LoadError", err)
			}
			for _, fe := range le.Errs {
				if fe.Error() == tc.want {
					return
				}
			}
			t.Errorf("err = %v; want a problem %q", err, tc.want)
		})
	}
}
