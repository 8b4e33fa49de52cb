#include "capi/address_set.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_set>
#include <vector>

namespace humus::capi {
namespace {
namespace HUMUS_UNITY_ID {

const void* address(uintptr_t n) { return reinterpret_cast<const void*>(n * 16 + 4096); }

TEST(AddressSet, HoldsWhatWasInsertedUntilErased) {
  AddressSet set;
  EXPECT_FALSE(set.contains(address(1)));
  EXPECT_FALSE(set.erase(address(1)));  // an empty set erases nothing
  set.insert(address(1));
  set.insert(address(2));
  EXPECT_TRUE(set.contains(address(1)));
  EXPECT_TRUE(set.contains(address(2)));
  EXPECT_FALSE(set.contains(address(3)));
  EXPECT_EQ(set.size(), 2u);
  EXPECT_TRUE(set.erase(address(1)));
  EXPECT_FALSE(set.erase(address(1)));  // twice: the second finds nothing, as a double free must
  EXPECT_FALSE(set.contains(address(1)));
  EXPECT_TRUE(set.contains(address(2)));  // found past the erased slot its probe may cross
  EXPECT_EQ(set.size(), 1u);
  set.insert(address(3));
  EXPECT_FALSE(set.erase_unless(address(3), [](const void*) { return true; }));  // kept: still there
  EXPECT_TRUE(set.contains(address(3)));
  EXPECT_TRUE(set.erase_unless(address(3), [](const void*) { return false; }));
  EXPECT_FALSE(set.contains(address(3)));
}

// Random inserts and erases against std::unordered_set: through growth, through tables full of erased
// marks, and back down, every address is found exactly while it is held.
TEST(AddressSet, AgreesWithAReferenceSetThroughGrowthAndChurn) {
  AddressSet set;
  std::unordered_set<const void*> reference;
  std::vector<const void*> held;
  std::mt19937_64 random(7);
  for (int round = 0; round < 200000; ++round) {
    // Grow by about 10,000 addresses, then shrink back towards none, then grow again.
    const bool growing = (round / 50000) % 2 == 0;
    const bool add = held.empty() || (random() % 100) < (growing ? 60u : 40u);
    if (add) {
      const void* p = address(random() % 1000000);
      if (reference.insert(p).second) {
        set.insert(p);
        held.push_back(p);
      }
    } else {
      const size_t at = random() % held.size();
      EXPECT_TRUE(set.erase(held[at]));
      reference.erase(held[at]);
      held[at] = held.back();
      held.pop_back();
    }
    if (round % 997 == 0) {
      ASSERT_EQ(set.size(), reference.size());
      for (const void* p : held) ASSERT_TRUE(set.contains(p));
      for (int probe = 0; probe < 64; ++probe) {
        const void* p = address(random() % 1000000);
        ASSERT_EQ(set.contains(p), reference.count(p) != 0);
      }
    }
  }
}

// Addresses 4 GiB apart (alike in every low bit) are all found, and erasing every other one leaves the
// rest reachable past the erased slots.
TEST(AddressSet, AddressesThatCollideAreAllFound) {
  AddressSet set;
  std::vector<const void*> all;
  for (uintptr_t n = 0; n < 4096; ++n) all.push_back(reinterpret_cast<const void*>((n << 32) + 4096));
  for (const void* p : all) set.insert(p);
  for (const void* p : all) EXPECT_TRUE(set.contains(p));
  for (size_t i = 0; i < all.size(); i += 2) EXPECT_TRUE(set.erase(all[i]));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(set.contains(all[i]), i % 2 == 1);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::capi
