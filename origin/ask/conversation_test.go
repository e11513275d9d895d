package ask

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// wireAnswer is the JSON answer as a client reads it.
type wireAnswer struct {
	Meta    Meta              `json:"_meta"`
	Results []json.RawMessage `json:"results"`
}

func askJSON(t *testing.T, body string) (wireAnswer, []map[string]any) {
	t.Helper()
	_, srv := serveReal(t)
	resp := post(t, srv, "application/json", body, nil)
	raw := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var a wireAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	for _, r := range a.Results {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatal(err)
		}
		items = append(items, m)
	}
	return a, items
}

// articles returns the slugs of the answer's articles, best first.
func articles(items []map[string]any) []string {
	var out []string
	for _, it := range items {
		if it["@type"] == "NewsArticle" {
			out = append(out, it["slug"].(string))
		}
	}
	return out
}

func TestFollowUps(t *testing.T) {
	const spain = "When must Spanish companies with turnover above €8m start exchanging e-invoices?"
	testCases := []struct {
		desc, body string
		// wantSubject is in the decontextualized query and in the best
		// article's slug; "" means the query is answered as it is.
		wantSubject string
	}{
		{desc: "follow-up in context.prev", body: `{"query":"and for the self-employed?","context":{"prev":["` + spain + `"]}}`, wantSubject: "Spain"},
		{desc: "follow-up in flat prev, comma-separated", body: `{"query":"and for everyone else?","prev":"hello,` + strings.ReplaceAll(spain, ",", "") + `"}`, wantSubject: "Spain"},
		{desc: "the latest query that names a country counts", body: `{"query":"what about smaller businesses?","context":{"prev":["When does Belgium require B2B e-invoices?","` + spain + `"]}}`, wantSubject: "Spain"},
		{desc: "a question that names its own country is no follow-up", body: `{"query":"When do French SMEs have to issue e-invoices?","context":{"prev":["` + spain + `"]}}`},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			a, items := askJSON(t, tc.body)
			slugs := articles(items)
			if tc.wantSubject == "" {
				if a.Meta.DecontextualizedQuery != "" {
					t.Errorf("decontextualized_query %q, want none", a.Meta.DecontextualizedQuery)
				}
				return
			}
			if !strings.Contains(a.Meta.DecontextualizedQuery, tc.wantSubject) {
				t.Errorf("decontextualized_query %q does not carry %s", a.Meta.DecontextualizedQuery, tc.wantSubject)
			}
			if len(slugs) == 0 || !strings.HasPrefix(slugs[0], strings.ToLower(tc.wantSubject)) {
				t.Errorf("best articles %v, want one about %s first", slugs, tc.wantSubject)
			}
		})
	}
	// Without prev the same follow-up is about nothing in particular: the
	// conversation is what makes it about Spain.
	_, items := askJSON(t, `{"query":"and for the self-employed?"}`)
	if slugs := articles(items); len(slugs) > 0 && strings.HasPrefix(slugs[0], "spain") {
		t.Errorf("without prev the follow-up still finds Spain first (%v): the test proves nothing", slugs)
	}
}

func TestModes(t *testing.T) {
	const q = `"query":"When does Belgium require B2B e-invoices?"`
	testCases := []struct {
		desc, body     string
		wantMode       string
		wantNote       bool
		wantMaxResults int
	}{
		{desc: "list is the default", body: `{` + q + `}`, wantMode: ModeList, wantMaxResults: DefaultResults},
		{desc: "summarize: summary first, fewer results", body: `{` + q + `,"prefer":{"mode":"summarize"}}`, wantMode: ModeSummarize, wantMaxResults: SummarizeResults},
		{desc: "summarize keeps an explicit max_results", body: `{` + q + `,"prefer":{"mode":"summarize","max_results":5}}`, wantMode: ModeSummarize, wantMaxResults: 5},
		{desc: "generate is answered as summarize, with a note", body: `{` + q + `,"prefer":{"mode":"generate"}}`, wantMode: ModeSummarize, wantNote: true, wantMaxResults: SummarizeResults},
		{desc: "flat generate_mode of the legacy protocol", body: `{` + q + `,"generate_mode":"summarize"}`, wantMode: ModeSummarize, wantMaxResults: SummarizeResults},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			a, items := askJSON(t, tc.body)
			if a.Meta.Mode != tc.wantMode {
				t.Errorf("_meta.mode %q, want %q", a.Meta.Mode, tc.wantMode)
			}
			if got := a.Meta.Note != ""; got != tc.wantNote || tc.wantNote && !strings.Contains(a.Meta.Note, "no generative model") {
				t.Errorf("_meta.note %q, want a note: %v", a.Meta.Note, tc.wantNote)
			}
			if len(items) == 0 || items[0]["@type"] != "SearchSummary" {
				t.Fatalf("the first item is not the summary: %v", items)
			}
			if n := len(articles(items)); n > tc.wantMaxResults || n == 0 {
				t.Errorf("%d articles, want 1 to %d", n, tc.wantMaxResults)
			}
		})
	}
}

// TestFollowUpNewSubject checks that a follow-up naming a country or
// specification of its own asks the earlier question of that subject: the
// earlier one's country is replaced, not carried beside the new one, and
// the kind of answer is the earlier question's.
func TestFollowUpNewSubject(t *testing.T) {
	e, err := realEngine()
	if err != nil {
		t.Fatal(err)
	}
	ix, err := e.Index(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	testCases := []struct {
		desc, query string
		prev        []string
		// want are in the question answered, notWant are not; wantKind is
		// what it asks for; wantFirst starts the best article's slug.
		want, notWant []string
		wantKind      questionKind
		wantFirst     string
	}{
		{desc: "what about another country", query: "and what about Germany?", prev: []string{"When does Belgium require B2B e-invoicing?"},
			want: []string{"Germany", "require B2B e-invoicing"}, notWant: []string{"Belgium"}, wantKind: askWhen, wantFirst: "germany"},
		{desc: "another country named by its demonym in the earlier query", query: "what about France?", prev: []string{"When must Spanish companies start exchanging e-invoices?"},
			want: []string{"France", "start exchanging e-invoices"}, notWant: []string{"Spain", "Spanish"}, wantKind: askWhen, wantFirst: "france"},
		{desc: "the new country, a specification of the earlier query kept", query: "and in Germany?", prev: []string{"When did FatturaPA 1.9 apply in Italy?"},
			want: []string{"Germany", "FatturaPA"}, notWant: []string{"Italy"}, wantKind: askWhen},
		{desc: "a follow-up naming no country still carries the earlier one", query: "and for the self-employed?", prev: []string{"When must Spanish companies start exchanging e-invoices?"},
			want: []string{"Spain"}, wantKind: askWhen, wantFirst: "spain"},
		{desc: "a follow-up with its own question keeps it", query: "and how many platforms does France have?", prev: []string{"When does Belgium require B2B e-invoicing?"},
			want: []string{"France"}, notWant: []string{"Belgium"}, wantKind: askAmount, wantFirst: "france"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			text, asked, followUp := ix.contextualize(tc.query, tc.prev)
			if !followUp {
				t.Fatalf("%q was not read as a follow-up", tc.query)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("answered %q, want %q in it", text, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(text, w) {
					t.Errorf("answered %q: %q is the earlier subject", text, w)
				}
			}
			if asked.kind != tc.wantKind {
				t.Errorf("asks %s, want %s", asked.kind, tc.wantKind)
			}
			if tc.wantFirst == "" {
				return
			}
			ans, err := e.Ask(t.Context(), Request{Query: tc.query, Prev: tc.prev})
			if err != nil {
				t.Fatal(err)
			}
			if len(ans.Results) == 0 || !strings.HasPrefix(ans.Results[0].Slug, tc.wantFirst) {
				t.Errorf("best articles %v, want one about %s first", articleSlugs(ans.Results), tc.wantFirst)
			}
		})
	}
}

func articleSlugs(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Slug)
	}
	return out
}
