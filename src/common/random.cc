#include "common/random.h"

#include <random>

namespace humus {

Random& system_random() {
  static SeededRandom random([] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }());
  return random;
}

}  // namespace humus
