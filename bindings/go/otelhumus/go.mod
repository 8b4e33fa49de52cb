module github.com/humus-http/humus_http/bindings/go/otelhumus

go 1.24.0

require (
	github.com/humus-http/humus_http/bindings/go v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/otel/trace v1.41.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.opentelemetry.io/otel v1.41.0 // indirect
)

// Development against the checkout: the humushttp package of this repository, whatever its version.
replace github.com/humus-http/humus_http/bindings/go => ../
