// The objects of a worker's replies, recycled. hiredis builds each reply
// of a redisReader through its redisReplyObjectFunctions: one object
// (calloc) per element, so a batch's reply of many integers costs as many
// allocations, all freed after its callback. These functions build the
// same tree as hiredis' own (0.14 and 1.x: the same fields, each element
// set in its parent), but take the objects, and the element arrays of up
// to kArrayCapacityMax elements, from free lists of the worker, and give
// them back when the reply is freed; a string's text (str) is malloc()ed
// and free()d as hiredis does. The lists are bounded: what is freed beyond
// them goes back to free().
//
// Each object and element array is calloc()ed on its own (an element array
// of n <= kArrayCapacityMax has room for the next power of two), so a
// freeReplyObject() on a reply built here frees it as well. The free
// lists are the worker's: one thread, no locks.
#pragma once

#include <hiredis/hiredis.h>

#include <cstddef>

namespace rrl::engine {

// The constructors and the free function for redisReader::fn; a reply
// freed by free_reply() must have been built by these.
extern redisReplyObjectFunctions reply_objects;
void free_reply(void* reply);

// The objects kept at most to be used again, and the element arrays of
// each capacity (1, 2, 4 .. kArrayCapacityMax).
constexpr std::size_t kObjectsKept = 2048;
constexpr std::size_t kArrayCapacityMax = 1024;
constexpr std::size_t kArraysKept(std::size_t capacity) {
    return capacity <= 64 ? 16 : 4;
}

// How many of each are kept now (for tests).
std::size_t objects_kept();
std::size_t arrays_kept();
// Frees what is kept.
void release_reply_objects();

}  // namespace rrl::engine
