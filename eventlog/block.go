package eventlog

import (
	"bytes"
	"fmt"
	"io"
)

// A Block is a run of whole lines of one part, for readers that split and
// parse lines on several goroutines.
type Block struct {
	Data []byte // complete lines, each ended by '\n' except possibly a part's last
	Pos  Pos    // position of the first line
}

// Lines calls fn for each non-empty line of the block with its position.
func (b Block) Lines(fn func(line []byte, pos Pos)) {
	pos := b.Pos
	data := b.Data
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		if t := trimCR(line); len(bytes.TrimSpace(t)) > 0 {
			fn(t, pos)
		}
		pos.Line++
		pos.Offset += int64(i + 1)
	}
}

// NextBlock returns about size bytes of whole lines (more when a line is
// longer), without copying them line by line, in buf's memory when it has
// room (the data of a block the caller is done with; nil for new memory).
// It is the block-wise form of Next and must not be mixed with Next on one
// Reader. At the end of the log it returns io.EOF. A part cut short is
// recorded in Truncations after its last complete line.
func (r *Reader) NextBlock(buf []byte, size int) (Block, error) {
	for {
		if r.br == nil {
			if r.part+1 >= len(r.parts) {
				return Block{}, io.EOF
			}
			r.part++
			if err := r.openPart(); err != nil {
				return Block{}, err
			}
			r.carry = r.carry[:0]
		}
		// A fresh block costs its pages' faults and clearing: a tenth of an
		// analysis, which reuses its blocks.
		if want := max(size, 2*len(r.carry)); cap(buf) < want {
			if err := r.Reserve(int64(want), "reading "+r.parts[r.part]); err != nil {
				return Block{}, fmt.Errorf("eventlog: %w", err)
			}
			buf = make([]byte, 0, want)
		}
		buf = append(buf[:0], r.carry...)
		r.carry = r.carry[:0]
		var err error
		for {
			for len(buf) < cap(buf) && err == nil {
				var n int
				// Straight from the decoder: through r.br every byte
				// would be copied once more.
				n, err = r.dec.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
			}
			if Refused(err) {
				return Block{}, fmt.Errorf("eventlog: %w", err)
			}
			if err != nil || bytes.IndexByte(buf, '\n') >= 0 {
				break
			}
			if len(buf) > maxLine {
				return Block{}, fmt.Errorf("eventlog: %s: line %d longer than %d bytes", r.parts[r.part], r.line+1, maxLine)
			}
			// The block it grew out of is garbage, and stays reserved:
			// memory the runtime has not collected is memory still.
			if err := r.Reserve(int64(2*cap(buf)), r.lineName(r.line+1)); err != nil {
				return Block{}, fmt.Errorf("eventlog: %w", err)
			}
			grown := make([]byte, len(buf), 2*cap(buf))
			copy(grown, buf)
			buf = grown
		}
		pos := Pos{File: r.parts[r.part], Part: r.part, Line: r.line + 1, Offset: r.off}
		if err == nil {
			// Keep the partial last line for the next block.
			end := bytes.LastIndexByte(buf, '\n') + 1
			had := cap(r.carry)
			r.carry = append(r.carry, buf[end:]...)
			if err := r.grew(had, cap(r.carry), r.lineName(r.line+1+bytes.Count(buf[:end], []byte{'\n'}))); err != nil {
				return Block{}, fmt.Errorf("eventlog: %w", err)
			}
			buf = buf[:end]
			r.line += bytes.Count(buf, []byte{'\n'})
			r.off += int64(len(buf))
			return Block{Data: buf, Pos: pos}, nil
		}
		// End of the part: clean (EOF) or cut short.
		if err != io.EOF {
			end := bytes.LastIndexByte(buf, '\n') + 1
			r.Truncations = append(r.Truncations, Truncation{
				Pos: Pos{File: pos.File, Part: pos.Part, Line: pos.Line + bytes.Count(buf[:end], []byte{'\n'}), Offset: pos.Offset + int64(end)},
				Err: err,
			})
			buf = buf[:end]
		}
		r.closePart()
		if len(buf) > 0 {
			return Block{Data: buf, Pos: pos}, nil
		}
	}
}
