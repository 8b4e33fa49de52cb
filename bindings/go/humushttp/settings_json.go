package humushttp

/*
#include <humus_http.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// SettingsFromJSON reads settings in the JSON form of docs/settings.md §3 (what an upstreams file or a config service
// holds). The library checks the document first, so every bad key is reported at once, misspellings with
// the nearest valid key: an *Error with ErrConfig and Fields. Safe for concurrent use.
func SettingsFromJSON(data []byte) (Settings, error) {
	if loadErr != nil {
		return Settings{}, loadErr
	}
	native, err := settingsFromJSON(data)
	if err != nil {
		return Settings{}, err
	}
	C.humus_settings_free(native)
	var s Settings
	if err := s.UnmarshalJSON(data); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// WithDefaults is s with every default filled in, as the library would apply it (humus_settings_to_json).
// Fails as building a client would for invalid settings (ErrConfig naming the keys). Safe for concurrent
// use.
func (s Settings) WithDefaults() (Settings, error) {
	if loadErr != nil {
		return Settings{}, loadErr
	}
	native, err := s.native()
	if err != nil {
		return Settings{}, err
	}
	defer C.humus_settings_free(native)
	var out *C.char
	var n C.size_t
	var cerr *C.humus_error
	if st := C.humus_settings_to_json(native, &out, &n, &cerr); st != C.HUMUS_OK {
		return Settings{}, takeError(st, cerr)
	}
	text := C.GoBytes(unsafe.Pointer(out), C.int(n))
	C.humus_string_free(out)
	var full Settings
	if err := full.UnmarshalJSON(text); err != nil {
		return Settings{}, err
	}
	return full, nil
}

// CheckSetting checks one value before building settings (docs/settings.md §3.1): key is a JSON key path such as
// "timeout" or "breaker.window", valueJSON its JSON value (`"5s"`, `20`). nil when valid; otherwise an
// *Error with ErrConfig naming the key (for an unknown key, the nearest valid one). Safe for concurrent use.
func CheckSetting(key, valueJSON string) error {
	if loadErr != nil {
		return loadErr
	}
	value := []byte(valueJSON)
	var cerr *C.humus_error
	if st := C.humus_settings_check_field(cstr(key), (*C.char)(cbytes(value)), C.size_t(len(value)), &cerr); st != C.HUMUS_OK {
		return takeError(st, cerr)
	}
	return nil
}

// SettingsSchemaJSON is the library's settings schema (humus_settings_schema_json): {"version": 1, "keys":
// [...]}, one entry per key path ("breaker.window") with its kind, default, bounds and doc. Safe for
// concurrent use.
func SettingsSchemaJSON() ([]byte, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	var out *C.char
	var n C.size_t
	var cerr *C.humus_error
	if st := C.humus_settings_schema_json(&out, &n, &cerr); st != C.HUMUS_OK {
		return nil, takeError(st, cerr)
	}
	text := C.GoBytes(unsafe.Pointer(out), C.int(n))
	C.humus_string_free(out)
	return text, nil
}

// native builds the library's settings object; the caller frees it.
func (s Settings) native() (*C.humus_settings, error) {
	data, err := s.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return settingsFromJSON(data)
}

func settingsFromJSON(data []byte) (*C.humus_settings, error) {
	var out *C.humus_settings
	var cerr *C.humus_error
	if st := C.humus_settings_from_json((*C.char)(cbytes(data)), C.size_t(len(data)), &out, &cerr); st != C.HUMUS_OK {
		return nil, takeError(st, cerr)
	}
	return out, nil
}

// MarshalJSON writes the §3 JSON form: zero fields left out, durations as strings ("250ms"). Marshal
// and Unmarshal follow encoding/json's rules: Unmarshal writes the receiver, so not concurrently with
// readers of it.
func (s Settings) MarshalJSON() ([]byte, error) { return marshalSettings(s) }

// UnmarshalJSON reads the §3 JSON form strictly: an unknown key or a malformed value is an *Error with
// ErrConfig naming it.
func (s *Settings) UnmarshalJSON(data []byte) error { return unmarshalSettings(data, s) }

// MarshalJSON writes the §3 JSON form of the retry_budget object.
func (b RetryBudget) MarshalJSON() ([]byte, error) { return marshalSettings(b) }

// UnmarshalJSON reads the §3 JSON form of the retry_budget object.
func (b *RetryBudget) UnmarshalJSON(data []byte) error { return unmarshalSettings(data, b) }

// MarshalJSON writes the §3 JSON form of the breaker object.
func (b BreakerSettings) MarshalJSON() ([]byte, error) { return marshalSettings(b) }

// UnmarshalJSON reads the §3 JSON form of the breaker object.
func (b *BreakerSettings) UnmarshalJSON(data []byte) error { return unmarshalSettings(data, b) }

// MarshalJSON writes the §3 JSON form of the bulkhead object.
func (b BulkheadSettings) MarshalJSON() ([]byte, error) { return marshalSettings(b) }

// UnmarshalJSON reads the §3 JSON form of the bulkhead object.
func (b *BulkheadSettings) UnmarshalJSON(data []byte) error { return unmarshalSettings(data, b) }

// --- The codec: encoding/json with durations as strings and zero values left out -------------------------

var durationType = reflect.TypeOf(time.Duration(0))

var pluginType = reflect.TypeOf((*Plugin)(nil))

func marshalSettings(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeStruct(&b, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func encodeStruct(b *bytes.Buffer, v reflect.Value) error {
	b.WriteByte('{')
	first := true
	for i := 0; i < v.NumField(); i++ {
		field := v.Field(i)
		if field.IsZero() {
			continue // the library's default applies
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		name, _ := json.Marshal(jsonName(v.Type().Field(i)))
		b.Write(name)
		b.WriteByte(':')
		if err := encodeValue(b, field); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func encodeValue(b *bytes.Buffer, v reflect.Value) error {
	switch {
	case v.Type() == durationType:
		b.WriteString(strconv.Quote(formatDuration(time.Duration(v.Int()))))
		return nil
	case v.Kind() == reflect.Pointer:
		return encodeValue(b, v.Elem())
	case v.Kind() == reflect.Struct:
		return encodeStruct(b, v)
	}
	data, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	b.Write(data)
	return nil
}

// formatDuration writes whole milliseconds as "250ms", anything finer in nanoseconds; the library reads
// Go's duration syntax, and a negative value reaches it to be refused with the key's name.
func formatDuration(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// jsonName is the field's key: its json tag's name, or for a second field of one key (a preset name or a
// plugin object, "classify") its humus tag, since two json tags may not name one key.
func jsonName(f reflect.StructField) string {
	if name := f.Tag.Get("humus"); name != "" {
		return name
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func unmarshalSettings(data []byte, v any) error {
	return decodeStruct(data, reflect.ValueOf(v).Elem(), "")
}

func decodeStruct(data []byte, v reflect.Value, path string) error {
	var object map[string]json.RawMessage
	if err := json.Unmarshal(data, &object); err != nil {
		return configError(path, "must be a JSON object: "+err.Error())
	}
	if object == nil { // null: nothing set
		return nil
	}
	fields := map[string]int{}
	plugins := map[string]int{} // a key that is a name or a plugin object ("classify"): the object's field
	for i := 0; i < v.NumField(); i++ {
		name := jsonName(v.Type().Field(i))
		if _, taken := fields[name]; taken && v.Type().Field(i).Type == pluginType {
			plugins[name] = i
			continue
		}
		fields[name] = i
	}
	for key, raw := range object {
		at := joinKey(path, key)
		i, ok := fields[key]
		if p, isPlugin := plugins[key]; isPlugin && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			i = p
		}
		if !ok {
			return configError(at, "unknown key")
		}
		if err := decodeValue(raw, v.Field(i), at); err != nil {
			return err
		}
	}
	return nil
}

func decodeValue(raw json.RawMessage, v reflect.Value, path string) error {
	if string(bytes.TrimSpace(raw)) == "null" {
		v.SetZero()
		return nil
	}
	switch {
	case v.Type() == durationType:
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return configError(path, "a duration is a string with a unit, e.g. \"250ms\"")
		}
		d, err := time.ParseDuration(text)
		if err != nil {
			return configError(path, err.Error())
		}
		v.SetInt(int64(d))
		return nil
	case v.Kind() == reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		if err := decodeValue(raw, elem.Elem(), path); err != nil {
			return err
		}
		v.Set(elem)
		return nil
	case v.Kind() == reflect.Struct:
		return decodeStruct(raw, v, path)
	}
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		return configError(path, err.Error())
	}
	return nil
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func configError(key, what string) *Error {
	return &Error{Status: StatusConfig, Message: fmt.Sprintf("%s: %s", key, what), Fields: []string{key}}
}
