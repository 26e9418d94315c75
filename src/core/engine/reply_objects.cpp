#include "engine/reply_objects.hpp"

#include <sanitizer/asan_interface.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace rrl::engine {

namespace {

// The blocks of one size kept to be used again, at most N, last in first
// out. They are listed apart, not linked through themselves: under ASan
// what is kept is poisoned (a reply used or freed again after its free is
// still caught) and LeakSanitizer, which does not read poisoned memory,
// still finds it.
template <std::size_t N>
struct FreeList {
    void* kept[N];
    std::size_t size = 0;

    void* take(std::size_t bytes) {
        if (size == 0) return nullptr;
        void* p = kept[--size];
        ASAN_UNPOISON_MEMORY_REGION(p, bytes);
        return p;
    }
    bool give(void* p, std::size_t bytes, std::size_t max) {
        if (size >= max || size >= N) return false;
        ASAN_POISON_MEMORY_REGION(p, bytes);
        kept[size++] = p;
        return true;
    }
    void release(std::size_t bytes) {
        while (void* p = take(bytes)) std::free(p);
    }
};

// the classes of element arrays: capacity 1 << c, c = 0 .. kClasses - 1
constexpr std::size_t capacity_class(std::size_t n) {
    std::size_t c = 0;
    while ((std::size_t{1} << c) < n) c++;
    return c;
}
constexpr std::size_t kClasses = capacity_class(kArrayCapacityMax) + 1;
constexpr std::size_t array_bytes(std::size_t c) {
    return (std::size_t{1} << c) * sizeof(redisReply*);
}

constexpr std::size_t kArraysKeptMax = kArraysKept(1);
static_assert(kArraysKept(kArrayCapacityMax) <= kArraysKeptMax);

FreeList<kObjectsKept> objects;
FreeList<kArraysKeptMax> arrays[kClasses];

// calloc()'s zeroes, as hiredis' own objects have
redisReply* new_object(int type) {
    void* p = objects.take(sizeof(redisReply));
    if (p != nullptr) {
        std::memset(p, 0, sizeof(redisReply));
    } else {
        p = std::calloc(1, sizeof(redisReply));
        if (p == nullptr) return nullptr;
    }
    auto* r = static_cast<redisReply*>(p);
    r->type = type;
    return r;
}

void delete_object(redisReply* r) {
    if (!objects.give(r, sizeof(redisReply), kObjectsKept)) std::free(r);
}

// n > 0 null elements: an element not read yet stays null (a reply freed
// half-read)
redisReply** new_elements(std::size_t n) {
    if (n > kArrayCapacityMax) {
        return static_cast<redisReply**>(std::calloc(n, sizeof(redisReply*)));
    }
    std::size_t c = capacity_class(n);
    void* p = arrays[c].take(array_bytes(c));
    if (p != nullptr) {
        std::memset(p, 0, n * sizeof(redisReply*));
        return static_cast<redisReply**>(p);
    }
    return static_cast<redisReply**>(std::calloc(1, array_bytes(c)));
}

void delete_elements(redisReply** element, std::size_t n) {
    if (n > 0 && n <= kArrayCapacityMax) {
        std::size_t c = capacity_class(n);
        if (arrays[c].give(element, array_bytes(c),
                           kArraysKept(std::size_t{1} << c))) {
            return;
        }
    }
    std::free(element);
}

// hiredis' reader hands an element's task its parent's, which is an
// aggregate built by create_array()
void* attach(const redisReadTask* task, redisReply* r) {
    if (task->parent != nullptr) {
        auto* parent = static_cast<redisReply*>(task->parent->obj);
        parent->element[task->idx] = r;
    }
    return r;
}

// the text copied and null-terminated; a RESP3 verbatim string's format
// ("txt" of "txt:...") kept apart in vtype
void* create_string(const redisReadTask* task, char* str, std::size_t len) {
    redisReply* r = new_object(task->type);
    if (r == nullptr) return nullptr;
#if HIREDIS_MAJOR >= 1
    if (task->type == REDIS_REPLY_VERB) {
        if (len < 4) {
            delete_object(r);
            return nullptr;
        }
        std::memcpy(r->vtype, str, 3);
        r->vtype[3] = '\0';
        str += 4;
        len -= 4;
    }
#endif
    auto* buf = static_cast<char*>(std::malloc(len + 1));
    if (buf == nullptr) {
        delete_object(r);
        return nullptr;
    }
    std::memcpy(buf, str, len);
    buf[len] = '\0';
    r->str = buf;
    r->len = len;
    return attach(task, r);
}

#if HIREDIS_MAJOR >= 1
using array_size = std::size_t;
#else
using array_size = int;
#endif

void* create_array(const redisReadTask* task, array_size elements) {
    redisReply* r = new_object(task->type);
    if (r == nullptr) return nullptr;
    auto n = static_cast<std::size_t>(elements);
    if (n > 0) {
        r->element = new_elements(n);
        if (r->element == nullptr) {
            delete_object(r);
            return nullptr;
        }
    }
    r->elements = n;
    return attach(task, r);
}

void* create_integer(const redisReadTask* task, long long value) {
    redisReply* r = new_object(REDIS_REPLY_INTEGER);
    if (r == nullptr) return nullptr;
    r->integer = value;
    return attach(task, r);
}

void* create_nil(const redisReadTask* task) {
    redisReply* r = new_object(REDIS_REPLY_NIL);
    if (r == nullptr) return nullptr;
    return attach(task, r);
}

#if HIREDIS_MAJOR >= 1
// RESP3's double keeps the text it was read from
void* create_double(const redisReadTask* task, double value, char* str,
                    std::size_t len) {
    if (len == SIZE_MAX) return nullptr;
    redisReply* r = new_object(REDIS_REPLY_DOUBLE);
    if (r == nullptr) return nullptr;
    r->dval = value;
    r->str = static_cast<char*>(std::malloc(len + 1));
    if (r->str == nullptr) {
        delete_object(r);
        return nullptr;
    }
    std::memcpy(r->str, str, len);
    r->str[len] = '\0';
    r->len = len;
    return attach(task, r);
}

void* create_bool(const redisReadTask* task, int value) {
    redisReply* r = new_object(REDIS_REPLY_BOOL);
    if (r == nullptr) return nullptr;
    r->integer = value != 0;
    return attach(task, r);
}
#endif

}  // namespace

#if HIREDIS_MAJOR >= 1
redisReplyObjectFunctions reply_objects = {
    create_string, create_array, create_integer, create_double,
    create_nil,    create_bool,  free_reply};
#else
redisReplyObjectFunctions reply_objects = {
    create_string, create_array, create_integer, create_nil, free_reply};
#endif

// As freeReplyObject(): an aggregate's elements, then its element array; a
// string's (error's, status's, double's ..) text. An attribute (RESP3,
// which hiredis' reader does not build) is freed as an aggregate.
void free_reply(void* reply) {
    auto* r = static_cast<redisReply*>(reply);
    if (r == nullptr) return;
    switch (r->type) {
        case REDIS_REPLY_ARRAY:
#if HIREDIS_MAJOR >= 1
        case REDIS_REPLY_MAP:
        case REDIS_REPLY_SET:
        case REDIS_REPLY_PUSH:
        case REDIS_REPLY_ATTR:
#endif
            if (r->element != nullptr) {
                for (std::size_t i = 0; i < r->elements; i++) {
                    free_reply(r->element[i]);
                }
                delete_elements(r->element, r->elements);
            }
            break;
        case REDIS_REPLY_ERROR:
        case REDIS_REPLY_STATUS:
        case REDIS_REPLY_STRING:
#if HIREDIS_MAJOR >= 1
        case REDIS_REPLY_DOUBLE:
        case REDIS_REPLY_VERB:
        case REDIS_REPLY_BIGNUM:
#endif
            std::free(r->str);
            break;
        default:
            break;
    }
    delete_object(r);
}

std::size_t objects_kept() {
    return objects.size;
}

std::size_t arrays_kept() {
    std::size_t n = 0;
    for (const auto& list : arrays) n += list.size;
    return n;
}

void release_reply_objects() {
    objects.release(sizeof(redisReply));
    for (std::size_t c = 0; c < kClasses; c++) {
        arrays[c].release(array_bytes(c));
    }
}

}  // namespace rrl::engine
