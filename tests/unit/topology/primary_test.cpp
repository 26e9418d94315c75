// The primary behind Sentinel (rrl::Primary): the first answer, the
// same primary again, a failover.
#include "topology/primary.hpp"

#include <gtest/gtest.h>

namespace {

int a, b;

TEST(Primary, FirstThenSameThenSwitched) {
    rrl::Primary p;
    void* old = &b;
    EXPECT_EQ(p.name(&a, &old), rrl::PrimaryChange::first);
    EXPECT_EQ(old, nullptr);
    EXPECT_EQ(p.node(), &a);
    EXPECT_EQ(p.name(&a, &old), rrl::PrimaryChange::same);
    EXPECT_EQ(old, nullptr);
    EXPECT_EQ(p.name(&b, &old), rrl::PrimaryChange::switched);
    EXPECT_EQ(old, &a);
    EXPECT_EQ(p.node(), &b);
    EXPECT_EQ(p.name(&a, &old), rrl::PrimaryChange::switched);
    EXPECT_EQ(old, &b);
}

}  // namespace
