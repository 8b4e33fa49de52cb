// The humus_settings handle behind the C ABI: plain settings, callbacks held by shared_ptr so a clone shares
// them and each callback's destroy runs once its last holder is gone.
#pragma once

#include "capi/handle.h"
#include "humus_http.h"
#include "settings/settings.h"

struct humus_settings {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kSettings;
  humus::capi::Magic magic = kMagic;
  humus::settings::Settings value;
};
