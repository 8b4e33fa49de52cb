/* Prints what the header says about every constant and struct humus-http-sys declares, one "key value" per
 * line, for tests/layout.rs to compare with the Rust declarations. Uses the header only (no linking). */
#include <stddef.h>
#include <stdio.h>

#include "humus_http.h"

#define CONST(name) printf("%s %lld\n", #name, (long long)(name))
#define LAYOUT(type)                                          \
  printf("size_of(%s) %zu\n", #type, sizeof(type));           \
  printf("align_of(%s) %zu\n", #type, (size_t)_Alignof(type))
#define FIELD(type, field) printf("offset_of(%s.%s) %zu\n", #type, #field, offsetof(type, field))

int main(void) {
  CONST(HUMUS_VERSION_MAJOR);
  CONST(HUMUS_VERSION_MINOR);
  CONST(HUMUS_VERSION_PATCH);
  CONST(HUMUS_VERSION_NUMBER);
  printf("HUMUS_VERSION_STRING %s\n", HUMUS_VERSION_STRING);
  CONST(HUMUS_ABI_VERSION);

  CONST(HUMUS_OK);
  CONST(HUMUS_E_INVALID_ARGUMENT);
  CONST(HUMUS_E_MISUSE);
  CONST(HUMUS_E_PROGRAM);
  CONST(HUMUS_E_CROSS_ORIGIN);
  CONST(HUMUS_E_NO_MEMORY);
  CONST(HUMUS_E_INTERNAL);
  CONST(HUMUS_E_CALLBACK);
  CONST(HUMUS_E_CONFIG);
  CONST(HUMUS_E_REJECTED);
  CONST(HUMUS_E_BULKHEAD_FULL);
  CONST(HUMUS_E_TIMEOUT);
  CONST(HUMUS_E_CANCELLED);
  CONST(HUMUS_E_CONNECT);
  CONST(HUMUS_E_RESOLVE);
  CONST(HUMUS_E_CONNECTION_LOST);
  CONST(HUMUS_E_PROTOCOL);
  CONST(HUMUS_E_STREAM_REFUSED);
  CONST(HUMUS_E_TOO_LARGE);
  CONST(HUMUS_E_RESOURCE);
  CONST(HUMUS_E_TLS);
  CONST(HUMUS_E_TLS_CLIENT_CERT);

  CONST(HUMUS_RETRY_DONE);
  CONST(HUMUS_RETRY_AGAIN);
  CONST(HUMUS_BREAKER_SUCCESS);
  CONST(HUMUS_BREAKER_FAILURE);
  CONST(HUMUS_BREAKER_IGNORED);
  CONST(HUMUS_CLASSIFIER_VERSION);
  CONST(HUMUS_BREAKER_COUNTS_VERSION);
  CONST(HUMUS_CIRCUIT_CLOSED);
  CONST(HUMUS_CIRCUIT_OPEN);
  CONST(HUMUS_CIRCUIT_HALF_OPEN);
  CONST(HUMUS_PROBE_CONTINUE);
  CONST(HUMUS_PROBE_CLOSE);
  CONST(HUMUS_PROBE_REOPEN);
  CONST(HUMUS_BREAKER_POLICY_VERSION);
  CONST(HUMUS_RETRY_MODE_DEFAULT);
  CONST(HUMUS_RETRY_MODE_FORBID);
  CONST(HUMUS_RETRY_MODE_FORCE);
  CONST(HUMUS_LOG_RECORD_VERSION);
  CONST(HUMUS_LOG_SINK_VERSION);
  CONST(HUMUS_METRIC_HISTOGRAM);
  CONST(HUMUS_METRIC_GAUGE);
  CONST(HUMUS_METRIC_COUNTER);
  CONST(HUMUS_METRIC_POINT_VERSION);
  CONST(HUMUS_MOCK_TRANSPORT_VERSION);
  CONST(HUMUS_ATTRIBUTE_STRING);
  CONST(HUMUS_ATTRIBUTE_INT);
  CONST(HUMUS_SPAN_STATUS_UNSET);
  CONST(HUMUS_SPAN_STATUS_ERROR);
  CONST(HUMUS_SPAN_VERSION);
  CONST(HUMUS_BODY_READER_VERSION);
  CONST(HUMUS_SPAN_SINK_VERSION);
  CONST(HUMUS_ATTEMPT_HOOKS_VERSION);
  CONST(HUMUS_READ_AHEAD_WHOLE);
  CONST(HUMUS_TOOK_BYTES);
  CONST(HUMUS_TOOK_LAST);
  CONST(HUMUS_TOOK_END);
  CONST(HUMUS_TOOK_WAIT);
  CONST(HUMUS_TAKE_DROP);
  CONST(HUMUS_WAIT_READ);
  CONST(HUMUS_WAIT_WRITE);

  LAYOUT(humus_status);
  LAYOUT(humus_classification);
  FIELD(humus_classification, retry);
  FIELD(humus_classification, breaker);
  FIELD(humus_classification, retry_after_ms);

  LAYOUT(humus_classifier);
  FIELD(humus_classifier, version);
  FIELD(humus_classifier, classify);
  FIELD(humus_classifier, user_data);
  FIELD(humus_classifier, destroy);

  LAYOUT(humus_attempt_hooks);
  FIELD(humus_attempt_hooks, version);
  FIELD(humus_attempt_hooks, user_data);
  FIELD(humus_attempt_hooks, before);
  FIELD(humus_attempt_hooks, after);
  FIELD(humus_attempt_hooks, destroy);

  LAYOUT(humus_breaker_counts);
  FIELD(humus_breaker_counts, version);
  FIELD(humus_breaker_counts, state);
  FIELD(humus_breaker_counts, successes);
  FIELD(humus_breaker_counts, failures);
  FIELD(humus_breaker_counts, consecutive_successes);
  FIELD(humus_breaker_counts, consecutive_failures);
  FIELD(humus_breaker_counts, timed_out_probes);
  FIELD(humus_breaker_counts, window_results);
  FIELD(humus_breaker_counts, window_failures);
  FIELD(humus_breaker_counts, slow_results);
  FIELD(humus_breaker_counts, window_slow);

  LAYOUT(humus_breaker_policy);
  FIELD(humus_breaker_policy, version);
  FIELD(humus_breaker_policy, trip);
  FIELD(humus_breaker_policy, probe);
  FIELD(humus_breaker_policy, user_data);
  FIELD(humus_breaker_policy, destroy);

  LAYOUT(humus_log_record);
  FIELD(humus_log_record, version);
  FIELD(humus_log_record, event);
  FIELD(humus_log_record, message);
  FIELD(humus_log_record, server_address);
  FIELD(humus_log_record, server_port);
  FIELD(humus_log_record, previous_state);
  FIELD(humus_log_record, new_state);
  FIELD(humus_log_record, counts);
  FIELD(humus_log_record, time_unix_ms);
  FIELD(humus_log_record, upstream);

  LAYOUT(humus_body_reader);
  FIELD(humus_body_reader, version);
  FIELD(humus_body_reader, user_data);
  FIELD(humus_body_reader, length);
  FIELD(humus_body_reader, read);
  FIELD(humus_body_reader, rewind);
  FIELD(humus_body_reader, destroy);

  LAYOUT(humus_log_sink);
  FIELD(humus_log_sink, version);
  FIELD(humus_log_sink, record);
  FIELD(humus_log_sink, user_data);
  FIELD(humus_log_sink, destroy);

  LAYOUT(humus_span_attribute);
  FIELD(humus_span_attribute, key);
  printf("offset_of(humus_span_attribute.type_) %zu\n", offsetof(humus_span_attribute, type)); /* a Rust keyword */
  FIELD(humus_span_attribute, string_value);
  FIELD(humus_span_attribute, int_value);

  LAYOUT(humus_span);
  FIELD(humus_span, version);
  FIELD(humus_span, name);
  FIELD(humus_span, trace_id);
  FIELD(humus_span, span_id);
  FIELD(humus_span, parent_span_id);
  FIELD(humus_span, tracestate);
  FIELD(humus_span, trace_flags);
  FIELD(humus_span, start_unix_ns);
  FIELD(humus_span, end_unix_ns);
  FIELD(humus_span, status);
  FIELD(humus_span, attribute_count);
  FIELD(humus_span, attributes);

  LAYOUT(humus_span_sink);
  FIELD(humus_span_sink, version);
  FIELD(humus_span_sink, span);
  FIELD(humus_span_sink, user_data);
  FIELD(humus_span_sink, destroy);

  LAYOUT(humus_metric_point);
  FIELD(humus_metric_point, version);
  FIELD(humus_metric_point, name);
  FIELD(humus_metric_point, unit);
  FIELD(humus_metric_point, kind);
  FIELD(humus_metric_point, server_address);
  FIELD(humus_metric_point, server_port);
  FIELD(humus_metric_point, attribute_name);
  FIELD(humus_metric_point, attribute_value);
  FIELD(humus_metric_point, value);
  FIELD(humus_metric_point, count);
  FIELD(humus_metric_point, sum);
  FIELD(humus_metric_point, bound_count);
  FIELD(humus_metric_point, bounds);
  FIELD(humus_metric_point, bucket_counts);
  FIELD(humus_metric_point, attribute_count);
  FIELD(humus_metric_point, attribute_names);
  FIELD(humus_metric_point, attribute_values);

  LAYOUT(humus_mock_transport);
  FIELD(humus_mock_transport, version);
  FIELD(humus_mock_transport, respond);
  FIELD(humus_mock_transport, user_data);
  FIELD(humus_mock_transport, destroy);
  return 0;
}
