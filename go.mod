module github.com/sparkprof/sparkprof

go 1.26

require (
	github.com/chzyer/readline v1.5.1 // indirect
	github.com/google/pprof v0.0.0-20260507013755-92041b743c96 // indirect
	github.com/grafana/jfr-parser v0.19.0 // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20250417193237-f615e6bd150b // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/pierrec/lz4/v4 v4.1.22 // indirect
	github.com/valyala/fastjson v1.6.4 // indirect
	golang.org/x/sys v0.32.0 // indirect
)
