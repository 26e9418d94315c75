#!/usr/bin/perl

# The rejection log line: redis_ratelimit_log_level, the escaping of
# non-printable key bytes, long keys; and how client keys map to Redis keys
# (raw bytes, or a SHA-1 for long keys and keys starting with "#").

use strict;
use warnings;

use Digest::SHA qw(sha1_hex);
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $http_x_key zone=lz rate=1r/h algorithm=fixed_window;
    redis_ratelimit_zone $binary_remote_addr zone=ip rate=1r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        redis_ratelimit zone=lz;

        location / {
        }
        location /info/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_log_level info;
        }
        location /notice/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_log_level notice;
        }
        location /warn/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_log_level warn;
        }
        location /ip/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=ip;
        }
    }
}
EOF2

$t->wait_window(3600, 10);

# exhausts key $k (1r/h) at $uri and returns the rejection's log line

sub reject {
    my ($uri, $k) = @_;
    my $before = () = $n->grep_log(qr/limiting requests/);
    my $r1 = $n->get($uri, headers => { 'X-Key' => $k });
    my $r2 = $n->get($uri, headers => { 'X-Key' => $k });
    is($r1->{status}, 200, "$uri: first request passes");
    is($r2->{status}, 429, "$uri: second request rejected");
    my @l = $n->grep_log(qr/limiting requests/);
    is(scalar @l, $before + 1, "$uri: one line logged");
    return ($l[-1] // '', $r2->{h}{'retry-after'} // 'none');
}

# levels

for my $level (qw(error info notice warn)) {
    my $uri = $level eq 'error' ? '/' : "/$level/";
    my ($line, $ra) = reject($uri, "lvl-$level");
    like($line, qr/^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d \[\Q$level\E\] \d+#\d+: \*\d+ limiting requests by zone "lz", key "lvl-\Q$level\E", rate 1r\/h, retry after \Q$ra\Es, client: /,
        "log level $level");
}

# non-printable bytes, '"' and '\' are escaped as \xNN

my $raw = "a\x01b\"c\\d\x7f\xffz";
my ($line) = reject('/', $raw);
like($line, qr/key "a\\x01b\\x22c\\x5cd\\x7f\\xffz", rate/, 'key bytes escaped in the log');

is($t->redis('EXISTS', "rrl:{lz:$raw}:fw"), 1, 'the Redis key has the raw bytes');

# a key of 128 bytes is used as is; longer ones and "#..." are hashed

my $k128 = 'k' x 128;
reject('/', $k128);
is($t->redis('EXISTS', "rrl:{lz:$k128}:fw"), 1, '128-byte key used as is');

my $k300 = 'x' x 300;
($line) = reject('/', $k300);
is($t->redis('EXISTS', 'rrl:{lz:#' . sha1_hex($k300) . '}:fw'), 1,
    '300-byte key: its SHA-1 in Redis');
like($line, qr/key "x{200,}\.\.\.", rate 1r\/h/, '300-byte key: cut in the log');

my $hash = '#not-a-hash';
($line) = reject('/', $hash);
is($t->redis('EXISTS', 'rrl:{lz:#' . sha1_hex($hash) . '}:fw'), 1,
    'key starting with "#": hashed, cannot collide with a hashed key');
like($line, qr/key "#not-a-hash"/, 'key starting with "#": as is in the log');

# a binary key with NUL bytes: $binary_remote_addr of 127.0.0.1

($line) = reject('/ip/', 'unused');
like($line, qr/limiting requests by zone "ip", key "\\x7f\\x00\\x00\\x01", rate 1r\/h/,
    'binary key with NUL bytes escaped in the log');
my @ip = grep { /^rrl:\{ip:/ } $t->redis('KEYS', 'rrl:{ip:*');
is(scalar @ip, 1, 'binary key: one Redis key');
is($ip[0] // '', "rrl:{ip:\x7f\x00\x00\x01}:fw", 'binary key: the 4 raw bytes in Redis');

is(scalar(() = $t->redis('KEYS', 'rrl:*')), 9, 'nine keys in Redis in all');

$t->done_testing;
