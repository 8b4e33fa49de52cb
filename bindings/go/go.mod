module github.com/humus-http/humus_http/bindings/go

go 1.24
