// The primary's extern "C" function (rrl_primary.h); it cannot throw.
#include "primary.hpp"
#include "rrl_primary.h"

int rrl_primary_switch(rrl_primary_t* p, void* node, void** old) noexcept {
    switch (rrl::primary_switch(p, node, old)) {
        case rrl::PrimaryChange::first:
            return RRL_PRIMARY_FIRST;
        case rrl::PrimaryChange::switched:
            return RRL_PRIMARY_SWITCHED;
        default:
            return RRL_PRIMARY_SAME;
    }
}
