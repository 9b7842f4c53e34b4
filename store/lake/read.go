package lake

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/sparkprof/sparkprof/profile"
)

// ReadSamples reads the samples of row group group (-1: all) of a
// block's samples file, of size bytes, from r; their ids refer to tables,
// the block's tables. name names the file in errors.
//
// It reads the columns whole, page by page, into the samples: the store's
// own columns (stack, label set and thread ids) and the few it needs
// besides (time, value, type, unit, thread state), never the label
// columns. parquet-go is not hardened against damaged files: a panic in
// it is turned into an error naming the file, so that a damaged block
// fails its query and not the server.
func ReadSamples(name string, r io.ReaderAt, size int64, group int, tables *profile.Profile) (samples []profile.Sample, err error) {
	defer func() {
		if v := recover(); v != nil {
			samples, err = nil, fmt.Errorf("%s: damaged Parquet: %v; move the block away to query without it", name, v)
		}
	}()
	if err := checkFooter(r, size); err != nil {
		return nil, fmt.Errorf("%s: %w; the block is damaged: move it away to query without it", name, err)
	}
	chunks := &chunkReader{r: r}
	f, err := parquet.OpenFile(chunks, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: %w; move the block away to query without it", name, err)
	}
	groups := f.RowGroups()
	if group >= len(groups) {
		return nil, fmt.Errorf("%s: no row group %d (the file has %d); the block is damaged: move it away to query without it", name, group, len(groups))
	}
	first, last := 0, len(groups)
	if group >= 0 {
		first, last = group, group+1
	}
	groups = groups[first:last]
	cr, err := newColumnReader(f.Schema(), tables)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := chunks.load(size, f.Metadata().RowGroups[first:last], cr.indexes()); err != nil {
		return nil, fmt.Errorf("%s: %w; the block is damaged: move it away to query without it", name, err)
	}
	n := int64(0)
	for _, rg := range groups {
		n += rg.NumRows()
	}
	if n < 0 || n > size*64 { // a row takes at least a bit of a page
		return nil, fmt.Errorf("%s: %d rows in %d bytes; the block is damaged: move it away to query without it", name, n, size)
	}
	samples = make([]profile.Sample, 0, n)
	for i, rg := range groups {
		if samples, err = cr.read(rg, samples); err != nil {
			if group >= 0 {
				i = group
			}
			return nil, fmt.Errorf("%s: row group %d: %w; move the block away to query without it", name, i, err)
		}
	}
	if err := tables.CheckSamples(samples); err != nil {
		return nil, fmt.Errorf("%s: %w; move the block away to query without it", name, err)
	}
	return samples, nil
}

// columnReader reads the store's columns of a samples file's row groups.
type columnReader struct {
	tables *profile.Profile
	// The leaf columns, by their names (ColTime...).
	cols map[string]parquet.LeafColumn
	// types maps a type name and unit to the tables' type id.
	types map[profile.SampleType]profile.TypeID
}

// The kind of values each column the store reads holds.
var readColumns = map[string]parquet.Kind{
	ColTime: parquet.Int64, ColValue: parquet.Int64, ColStack: parquet.Int32, ColLabelSet: parquet.Int32,
	ColThread: parquet.Int32, ColType: parquet.ByteArray, ColUnit: parquet.ByteArray, ColThreadState: parquet.ByteArray,
}

func newColumnReader(s *parquet.Schema, tables *profile.Profile) (*columnReader, error) {
	cr := &columnReader{tables: tables, cols: map[string]parquet.LeafColumn{}, types: map[profile.SampleType]profile.TypeID{}}
	for name, kind := range readColumns {
		lc, ok := s.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("no column %q: not a sparkprof samples file", name)
		}
		if k := lc.Node.Type().Kind(); k != kind || lc.MaxRepetitionLevel != 0 || lc.MaxDefinitionLevel > 1 {
			return nil, fmt.Errorf("column %q holds %v (repetition %d, definition %d), want %v: not a sparkprof samples file",
				name, k, lc.MaxRepetitionLevel, lc.MaxDefinitionLevel, kind)
		}
		cr.cols[name] = lc
	}
	for i, t := range tables.Types {
		cr.types[t] = profile.TypeID(i)
	}
	return cr, nil
}

// indexes returns the indexes of the columns cr reads.
func (cr *columnReader) indexes() []int {
	var out []int
	for _, lc := range cr.cols {
		out = append(out, lc.ColumnIndex)
	}
	slices.Sort(out)
	return out
}

// read appends the samples of row group rg to samples.
func (cr *columnReader) read(rg parquet.RowGroup, samples []profile.Sample) ([]profile.Sample, error) {
	start := len(samples)
	n := int(rg.NumRows())
	samples = samples[:start+n]
	out := samples[start:]
	clear(out)
	chunks := rg.ColumnChunks()
	column := func(name string, conv func([]byte) (int64, error), set func(s *profile.Sample, v int64)) error {
		return eachValue(chunks[cr.cols[name].ColumnIndex], n, conv, func(row int, v int64) { set(&out[row], v) })
	}
	// A type is a name and a unit: each row's name and unit are indexes
	// into the values met, and the pair maps to the type.
	var names, units []string
	intern := func(vs *[]string) func([]byte) (int64, error) {
		return func(b []byte) (int64, error) {
			for i, v := range *vs {
				if v == string(b) {
					return int64(i), nil
				}
			}
			if len(*vs) >= maxTypes {
				return 0, fmt.Errorf("more than %d sample types", maxTypes)
			}
			*vs = append(*vs, string(b))
			return int64(len(*vs) - 1), nil
		}
	}
	nameOf := make([]uint8, n)
	state := func(b []byte) (int64, error) { return int64(profile.ParseThreadState(string(b))), nil }
	err := errors.Join(
		column(ColTime, nil, func(s *profile.Sample, v int64) { s.Time = v * 1000 }),
		column(ColValue, nil, func(s *profile.Sample, v int64) { s.Value = v }),
		column(ColStack, nil, func(s *profile.Sample, v int64) { s.Stack = profile.StackID(uint32(v)) }),
		column(ColLabelSet, nil, func(s *profile.Sample, v int64) { s.Labels = profile.LabelSetID(uint32(v)) }),
		column(ColThread, nil, func(s *profile.Sample, v int64) { s.Thread = profile.ThreadID(uint32(v)) }),
		column(ColThreadState, state, func(s *profile.Sample, v int64) { s.State = profile.ThreadState(v) }),
		eachValue(chunks[cr.cols[ColType].ColumnIndex], n, intern(&names), func(row int, v int64) { nameOf[row] = uint8(v) }),
	)
	if err != nil {
		return nil, err
	}
	var bad error
	err = eachValue(chunks[cr.cols[ColUnit].ColumnIndex], n, intern(&units), func(row int, v int64) {
		t := profile.SampleType{Name: names[nameOf[row]], Unit: units[v]}
		id, ok := cr.types[t]
		if !ok && bad == nil {
			bad = fmt.Errorf("row %d: sample type %s is not among the block's", row, t)
		}
		out[row].Type = id
	})
	return samples, errors.Join(err, bad)
}

// maxTypes is the most sample types a profile has (profile.TypeID).
const maxTypes = 256

// eachValue calls set with each row of column chunk cc, which has n rows,
// and the row's value: an integer column's, or for a string column what
// conv makes of it (once for each value of a dictionary). A null is 0.
func eachValue(cc parquet.ColumnChunk, n int, conv func([]byte) (int64, error), set func(row int, v int64)) error {
	pages := cc.Pages()
	defer pages.Close()
	row := 0
	var dict parquet.Dictionary
	var dictVals []int64
	for {
		page, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("column %d: %w", cc.Column(), err)
		}
		rows := int(page.NumRows())
		if rows < 0 || rows > n-row {
			parquet.Release(page)
			return fmt.Errorf("column %d: a page of %d rows after %d of %d", cc.Column(), rows, row, n)
		}
		if d := page.Dictionary(); d != nil && d != dict {
			dict = d
			if dictVals, err = dictValues(d, conv); err != nil {
				parquet.Release(page)
				return fmt.Errorf("column %d: dictionary: %w", cc.Column(), err)
			}
		}
		err = pageValues(page, row, conv, set, dictVals)
		parquet.Release(page)
		if err != nil {
			return fmt.Errorf("column %d: %w", cc.Column(), err)
		}
		row += rows
	}
	if row != n {
		return fmt.Errorf("column %d: %d values for %d rows", cc.Column(), row, n)
	}
	return nil
}

// dictValues returns the values of dictionary d: integers, or what conv
// makes of strings.
func dictValues(d parquet.Dictionary, conv func([]byte) (int64, error)) ([]int64, error) {
	out := make([]int64, d.Len())
	for i := range out {
		v := d.Index(int32(i))
		switch {
		case conv != nil && v.Kind() == parquet.ByteArray:
			x, err := conv(v.ByteArray())
			if err != nil {
				return nil, err
			}
			out[i] = x
		case conv == nil && v.Kind() == parquet.Int64:
			out[i] = v.Int64()
		case conv == nil && v.Kind() == parquet.Int32:
			out[i] = int64(v.Int32())
		default:
			return nil, fmt.Errorf("a value of kind %v", v.Kind())
		}
	}
	return out, nil
}

// pageValues calls set with the rows of page, the first of which is row
// first, and their values: those of an integer column, what conv makes of
// a string column's, or for a page of dictionary indexes dictVals'.
func pageValues(page parquet.Page, first int, conv func([]byte) (int64, error), set func(int, int64), dictVals []int64) error {
	defs := page.DefinitionLevels()
	data := page.Data()
	indexed := page.Dictionary() != nil
	var i64 []int64
	var i32 []int32
	var bytes []byte
	var offsets []uint32
	size := 0
	switch kind := data.Kind(); {
	case indexed && kind == encoding.Int32 || !indexed && conv == nil && kind == encoding.Int32:
		i32 = data.Int32()
		size = len(i32)
	case !indexed && conv == nil && kind == encoding.Int64:
		i64 = data.Int64()
		size = len(i64)
	case !indexed && conv != nil && kind == encoding.ByteArray:
		bytes, offsets = data.ByteArray()
		size = max(len(offsets)-1, 0)
	default:
		return fmt.Errorf("values of kind %v", kind)
	}
	rows := int(page.NumRows())
	if len(defs) == 0 && size != rows || len(defs) != 0 && len(defs) != rows {
		return fmt.Errorf("a page of %d rows holds %d values", rows, size)
	}
	k := 0 // the next value
	for r := range rows {
		if len(defs) != 0 && defs[r] == 0 {
			continue // null: the sample keeps its zero
		}
		if k >= size {
			return fmt.Errorf("a page of %d rows holds %d values", rows, size)
		}
		switch {
		case indexed:
			x := int(i32[k])
			if x < 0 || x >= len(dictVals) {
				return fmt.Errorf("dictionary index %d out of %d", x, len(dictVals))
			}
			set(first+r, dictVals[x])
		case i64 != nil:
			set(first+r, i64[k])
		case i32 != nil:
			set(first+r, int64(i32[k]))
		default:
			lo, hi := offsets[k], offsets[k+1]
			if lo > hi || int(hi) > len(bytes) {
				return fmt.Errorf("value %d at bytes %d to %d of %d", k, lo, hi, len(bytes))
			}
			v, err := conv(bytes[lo:hi])
			if err != nil {
				return err
			}
			set(first+r, v)
		}
		k++
	}
	return nil
}

// maxChunkBytes bounds a column chunk's uncompressed size: a block's
// samples file holds a partition's samples, far less.
const maxChunkBytes = 1 << 30

// chunkReader reads a samples file from r, but for the column chunks
// load read into memory, and checked, which it serves from there: each
// row group the store reads is one read of r, a ranged read of a bucket's
// object, and parquet-go reads no chunk that was not checked.
type chunkReader struct {
	r     io.ReaderAt
	spans []chunkSpan // by offset, apart
}

// chunkSpan is bytes of the file from offset off.
type chunkSpan struct {
	off  int64
	data []byte
}

func (c *chunkReader) ReadAt(p []byte, off int64) (int, error) {
	for _, sp := range c.spans {
		if off >= sp.off && off+int64(len(p)) <= sp.off+int64(len(sp.data)) {
			return copy(p, sp.data[off-sp.off:]), nil
		}
	}
	return c.r.ReadAt(p, off)
}

// load reads, in one read a row group, the chunks of columns cols of row
// groups groups of a file of size bytes, and checks them: their codec and
// sizes, and their pages' (checkPages).
func (c *chunkReader) load(size int64, groups []format.RowGroup, cols []int) error {
	for i, rg := range groups {
		lo, hi := size, int64(0)
		for _, j := range cols {
			if j >= len(rg.Columns) {
				return fmt.Errorf("row group %d has %d columns, not column %d", i, len(rg.Columns), j)
			}
			m := rg.Columns[j].MetaData
			if m.Codec != format.Zstd && m.Codec != format.Uncompressed {
				return fmt.Errorf("row group %d, column %d: compressed with %v, where blocks are zstd", i, j, m.Codec)
			}
			if m.TotalUncompressedSize < 0 || m.TotalUncompressedSize > maxChunkBytes || m.TotalCompressedSize < 0 {
				return fmt.Errorf("row group %d, column %d: %d bytes uncompressed, %d compressed", i, j, m.TotalUncompressedSize, m.TotalCompressedSize)
			}
			start, end := chunkBounds(m)
			if start < 0 || end < start || end > size {
				return fmt.Errorf("row group %d, column %d: pages at %d–%d of a %d-byte file", i, j, start, end, size)
			}
			lo, hi = min(lo, start), max(hi, end)
		}
		if hi <= lo {
			continue
		}
		data := make([]byte, hi-lo)
		if _, err := c.r.ReadAt(data, lo); err != nil {
			return fmt.Errorf("row group %d: read %d bytes at %d: %w", i, hi-lo, lo, err)
		}
		for _, j := range cols {
			m := rg.Columns[j].MetaData
			start, end := chunkBounds(m)
			if err := checkPages(data[start-lo:end-lo], start, size, m); err != nil {
				return fmt.Errorf("row group %d, column %d: %w", i, j, err)
			}
		}
		c.spans = append(c.spans, chunkSpan{lo, data})
	}
	return nil
}

// chunkBounds returns where the pages of a column chunk start and end.
func chunkBounds(m format.ColumnMetaData) (start, end int64) {
	start = m.DataPageOffset
	if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
		start = m.DictionaryPageOffset
	}
	return start, start + m.TotalCompressedSize
}

// checkFooter checks that the footer length at the end of a Parquet file
// of size bytes fits in the file: parquet-go allocates whatever length it
// finds there before reading the footer.
func checkFooter(r io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("%d bytes, too few for a Parquet file", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("read the footer length at %d: %w", size-8, err)
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("a footer of %d bytes in a %d-byte file", n, size)
	}
	return nil
}

// checkPages reads the page headers of chunk, a column chunk at offset
// start of a file of size bytes, and checks each page's sizes, and its
// zstd frame's content size, against maxChunkBytes and the page.
func checkPages(chunk []byte, start, size int64, m format.ColumnMetaData) error {
	if m.NumValues < 0 || m.NumValues > size*64 {
		return fmt.Errorf("%d values in a %d-byte file", m.NumValues, size)
	}
	var proto thrift.CompactProtocol
	for off := 0; off < len(chunk); {
		// A reader of bytes, not of an io.Reader: it refuses a length
		// past the bytes left, where the other allocates whatever length
		// a damaged header claims before reading it.
		pr := proto.NewReaderFromBytes(chunk[off:])
		var h format.PageHeader
		if err := thrift.NewDecoder(pr).Decode(&h); err != nil {
			return fmt.Errorf("page header at %d: %w", start+int64(off), err)
		}
		data := off + pr.BytesRead()
		if h.UncompressedPageSize < 0 || int64(h.UncompressedPageSize) > maxChunkBytes || h.CompressedPageSize < 0 || int(h.CompressedPageSize) > len(chunk)-data {
			return fmt.Errorf("page at %d: %d bytes uncompressed, %d compressed", start+int64(off), h.UncompressedPageSize, h.CompressedPageSize)
		}
		// parquet-go sizes a page's value buffers by its count of values:
		// a value takes at least a bit of the file, as a row does.
		values := max(int64(h.DataPageHeader.V.NumValues), int64(h.DataPageHeaderV2.V.NumValues), int64(h.DictionaryPageHeader.V.NumValues))
		if min(h.DataPageHeader.V.NumValues, h.DataPageHeaderV2.V.NumValues, h.DictionaryPageHeader.V.NumValues) < 0 || values > size*64 {
			return fmt.Errorf("page at %d: %d values in a %d-byte file", start+int64(off), values, size)
		}
		page := chunk[data : data+int(h.CompressedPageSize)]
		if h.DataPageHeaderV2.Valid {
			v2 := h.DataPageHeaderV2.V
			levels := int(v2.RepetitionLevelsByteLength) + int(v2.DefinitionLevelsByteLength)
			if levels < 0 || levels > len(page) {
				return fmt.Errorf("page at %d: %d bytes of levels in %d", start+int64(off), levels, len(page))
			}
			page = page[levels:]
		}
		if m.Codec == format.Zstd && len(page) > 0 {
			var zh zstd.Header
			if err := zh.Decode(page); err == nil && zh.HasFCS && zh.FrameContentSize > uint64(h.UncompressedPageSize) {
				return fmt.Errorf("page at %d: a zstd frame of %d bytes in a page of %d", start+int64(off), zh.FrameContentSize, h.UncompressedPageSize)
			}
		}
		off = data + int(h.CompressedPageSize)
	}
	return nil
}
