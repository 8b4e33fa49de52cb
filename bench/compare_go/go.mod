module github.com/humus-http/humus_http/bench/compare_go

go 1.24

require github.com/humus-http/humus_http/bindings/go v0.0.0

replace github.com/humus-http/humus_http/bindings/go => ../../bindings/go
