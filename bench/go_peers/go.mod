module github.com/humus-http/humus_http/bench/go_peers

go 1.24

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/humus-http/humus_http/bindings/go v0.0.0
	github.com/sony/gobreaker/v2 v2.4.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
)

replace github.com/humus-http/humus_http/bindings/go => ../../bindings/go
