package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/invoicewire/invoicewire/internal/content"
)

// removal is a stored registry entry that the content tree no longer
// holds (Publisher.Prune).
type removal struct {
	kind, id string
	// file is the registry file the entry was removed from, for errors.
	file string
	key  string
	// tags are the surrogate keys a write of the entry purges: its
	// removal changes the same answers.
	tags []string
}

// pruneBatch is how many records of unfiled articles one MGET reads.
const pruneBatch = 512

// removals lists the stored registry entries that c no longer holds,
// ordered by registry and id. It refuses, before anything is written, to
// remove an entry that a published article still cites: such an article
// has no file in the tree (content.Load refuses a file citing an unknown
// entry), and it stays published, so its page would cite an entry the API
// no longer serves. A country is looked up in its own index, which holds
// every published article citing it; sources and specs have none, so the
// records of the unfiled articles are read, which costs O(unfiled).
func (p *Publisher) removals(ctx context.Context, c *content.Corpus, unfiled []string) ([]removal, error) {
	var out []removal
	gone := func(kind, file, key string, ids []string, tags func(string) []string) error {
		keep := make(map[string]bool, len(ids))
		for _, id := range ids {
			keep[id] = true
		}
		stored, err := p.Store.rdb.HKeys(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("store: listing the stored %s entries: %w", kind, err)
		}
		slices.Sort(stored)
		for _, id := range stored {
			if !keep[id] {
				out = append(out, removal{kind: kind, id: id, file: file, key: key, tags: tags(id)})
			}
		}
		return nil
	}
	sources := make([]string, len(c.Sources))
	for i, s := range c.Sources {
		sources[i] = s.Slug
	}
	countries := make([]string, len(c.Countries))
	for i, cty := range c.Countries {
		countries[i] = cty.Code
	}
	specs := make([]string, len(c.Specs))
	for i, sp := range c.Specs {
		specs[i] = sp.Slug
	}
	if err := gone("source", "sources.yaml", keySources, sources, sourceTags); err != nil {
		return nil, err
	}
	if err := gone("country", "countries.yaml", keyCountries, countries, countryTags); err != nil {
		return nil, err
	}
	if err := gone("spec", "specs.yaml", keySpecs, specs, specTags); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}

	refused := func(r removal, slug string) error {
		return fmt.Errorf("store: %s %q is no longer in %s, but the published article %q, which has no file in the tree, still cites it: keep the entry, or retract the article first",
			r.kind, r.id, r.file, slug)
	}
	removed := map[string]*removal{}
	for i := range out {
		r := &out[i]
		removed[r.kind+" "+r.id] = r
		if r.kind != "country" {
			continue
		}
		slugs, err := p.Store.rdb.ZRange(ctx, keyIndex("country", r.id), 0, 0).Result()
		if err != nil {
			return nil, fmt.Errorf("store: reading the articles citing country %q: %w", r.id, err)
		}
		if len(slugs) > 0 {
			return nil, refused(*r, slugs[0])
		}
	}
	for chunk := range slices.Chunk(unfiled, pruneBatch) {
		recs, err := p.Store.ArticlesBySlug(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("store: reading the published articles without a file: %w", err)
		}
		for _, raw := range recs {
			if raw == nil {
				continue
			}
			rec, err := raw.Decode()
			if err != nil {
				return nil, err
			}
			if rec.Retracted() {
				continue
			}
			cites := make([]string, 0, len(rec.Sources)+len(rec.Specs)+len(rec.Countries))
			for _, s := range rec.Sources {
				cites = append(cites, "source "+s.Source)
			}
			for _, sp := range rec.Specs {
				cites = append(cites, "spec "+sp)
			}
			for _, cc := range rec.Countries {
				cites = append(cites, "country "+cc)
			}
			for _, k := range cites {
				if r, ok := removed[k]; ok {
					return nil, refused(*r, rec.Slug)
				}
			}
		}
	}
	return out, nil
}

// remove deletes one registry entry, purging what its write would.
func (p *Publisher) remove(ctx context.Context, r removal) (Outcome, error) {
	c := p.newChange()
	c.hdel(r.key, r.id)
	c.Invalidate(r.tags...)
	v, err := p.Store.Apply(ctx, c)
	return Outcome{Changed: true, Removed: true, Version: v}, err
}
