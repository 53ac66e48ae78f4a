// Package toolsearch ranks the tools of a virtual host for a plainly
// worded query (BM25F over a tool's fields, stemmed), so that a client
// shown only a search tool still finds the tool that does what it wants.
//
// It knows tools only as the fields a search reads (Doc): the router
// fetches the lists, publishes the names, judges access and writes the
// answers. The ranking sits behind Ranker, so that another way of ranking
// (a semantic one, over an embeddings endpoint) can take its place
// without the router changing.
package toolsearch

// Doc is what a search reads of one tool.
type Doc struct {
	// Name is the tool's name as the backend gives it (the published
	// name's backend prefix is Backend, indexed apart).
	Name  string
	Title string
	// Description is the tool's description; Hint (its
	// _meta["anthropic/searchHint"]) is indexed with it.
	Description, Hint string
	// Params are the tool's input parameters: their names and
	// descriptions, top level and nested.
	Params []Param
	// Backend is the key of the backend that serves the tool.
	Backend string
}

// Param is one input parameter of a tool.
type Param struct {
	Name, Description string
}

// Segment is the ranking's form of one list of tools (one backend's, as
// one kind of caller is shown it): built once when the list is fetched,
// read by any number of searches at once.
type Segment interface {
	// Len is the number of tools in the segment.
	Len() int
}

// Part is one segment a search ranks, with the tools of it the caller
// may see.
type Part struct {
	Seg Segment
	// Visible has bit i set when tool i may be returned; nil: all may.
	// Tools outside it are neither returned nor counted in the
	// statistics the scores use.
	Visible Bits
}

// Hit is one tool found: its part and its index there, and its score
// (higher is better; comparable only within one search).
type Hit struct {
	Part, Doc int
	Score     float64
}

// Ranker builds segments and ranks them. BM25F (NewBM25F) is the one
// this package has.
type Ranker interface {
	// Index builds the segment of a list of tools; Doc i is tool i.
	Index(docs []Doc) Segment
	// Rank returns at most limit tools of parts that match query, best
	// first. Segments are those its own Index built.
	Rank(query string, parts []Part, limit int) []Hit
}

// Bits is a set of tool indexes.
type Bits []uint64

// NewBits is an empty set for n tools.
func NewBits(n int) Bits { return make(Bits, (n+63)/64) }

// Set adds i.
func (b Bits) Set(i int) { b[i/64] |= 1 << (uint(i) % 64) }

// Has reports whether i is in the set.
func (b Bits) Has(i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }
