#!/usr/bin/perl

# Configuration errors: each bad configuration fails "nginx -t" with the
# exact message, naming the directive, the bad value and FILE:LINE (the
# line marked "# HERE" in the template); good configurations pass.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;

# one server line, then the case's http-level lines
sub http_conf {
    my ($lines) = @_;
    return "http {\n    redis_ratelimit_server 127.0.0.1:6379;\n$lines}\n";
}

my $srv = <<'EOF2';
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            %%LINE%%
        }
    }
EOF2

sub in_location {
    my ($line) = @_;
    (my $c = $srv) =~ s/%%LINE%%/$line/;
    return http_conf($c);
}

# [name, template, expected message with FILE and LINE (and FIRST) to fill]
my @bad = (
    ['rate with a bad unit', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/x; # HERE\n"),
        'invalid rate "rate=5r/x" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate of zero', http_conf("    redis_ratelimit_zone \$a zone=z rate=0r/s; # HERE\n"),
        'invalid rate "rate=0r/s" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate without r', http_conf("    redis_ratelimit_zone \$a zone=z rate=5/s; # HERE\n"),
        'invalid rate "rate=5/s" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate per ms', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/ms; # HERE\n"),
        'invalid rate "rate=5r/ms" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate over a zero period', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/0s; # HERE\n"),
        'invalid rate "rate=5r/0s" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['unknown algorithm', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s algorithm=bogus_bucket; # HERE\n"),
        'invalid algorithm "algorithm=bogus_bucket" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['algorithm names are case-sensitive', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s algorithm=GCRA; # HERE\n"),
        'invalid algorithm "algorithm=GCRA" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['empty algorithm', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s algorithm=; # HERE\n"),
        'invalid algorithm "algorithm=" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['token_bucket with burst=0', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s algorithm=token_bucket burst=0; # HERE\n"),
        '"burst=0" leaves no room for any request with "algorithm=token_bucket" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['token_bucket with burst=0 first', http_conf("    redis_ratelimit_zone \$a zone=z burst=0 rate=5r/s algorithm=token_bucket; # HERE\n"),
        '"burst=0" leaves no room for any request with "algorithm=token_bucket" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['duplicate zone', http_conf("    redis_ratelimit_zone \$a zone=x rate=5r/s; # FIRST\n"
            . "    redis_ratelimit_zone \$b zone=x rate=1r/m; # HERE\n"),
        'zone "x" is duplicate in "redis_ratelimit_zone" directive, first defined in FILE:FIRST in FILE:LINE'],
    ['zone without rate', http_conf("    redis_ratelimit_zone \$a zone=z; # HERE\n"),
        '"redis_ratelimit_zone" must have "rate" parameter in FILE:LINE'],
    ['zone without name', http_conf("    redis_ratelimit_zone \$a rate=1r/s; # HERE\n"),
        '"redis_ratelimit_zone" must have "zone" parameter in FILE:LINE'],
    ['zone name with a brace', http_conf("    redis_ratelimit_zone \$a \"zone=a{b\" rate=1r/s; # HERE\n"),
        'invalid zone name "a{b" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['zone name with a colon', http_conf("    redis_ratelimit_zone \$a zone=a:b rate=1r/s; # HERE\n"),
        'invalid zone name "a:b" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['rate with units out of order', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/30m1h; # HERE\n"),
        'invalid rate "rate=5r/30m1h" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['negative burst', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s burst=-1; # HERE\n"),
        'invalid burst value "burst=-1" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['overrides neither on nor off', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s overrides=x; # HERE\n"),
        'invalid value "overrides=x" in "redis_ratelimit_zone" directive, it must be "on" or "off" in FILE:LINE'],
    ['overrides in capitals', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s overrides=On; # HERE\n"),
        'invalid value "overrides=On" in "redis_ratelimit_zone" directive, it must be "on" or "off" in FILE:LINE'],
    ['unknown zone parameter', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s foo=1; # HERE\n"),
        'invalid parameter "foo=1" in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['overrides empty', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s overrides=; # HERE\n"),
        'invalid value "overrides=" in "redis_ratelimit_zone" directive, it must be "on" or "off" in FILE:LINE'],
    ['overrides in capitals, before rate', http_conf("    redis_ratelimit_zone \$a zone=z overrides=ON rate=1r/s; # HERE\n"),
        'invalid value "overrides=ON" in "redis_ratelimit_zone" directive, it must be "on" or "off" in FILE:LINE'],
    ['lease of 0%', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s lease=0%; # HERE\n"),
        'invalid lease value "lease=0%" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease over 100%', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s lease=101%; # HERE\n"),
        'invalid lease value "lease=101%" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease without %', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s lease=10; # HERE\n"),
        'invalid lease value "lease=10" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease on a sliding_log', http_conf("    redis_ratelimit_zone \$a zone=z lease=10% rate=1r/s algorithm=sliding_log; # HERE\n"),
        '"lease=10%" cannot be used with "algorithm=sliding_log" (a sliding_log keeps each request\'s own time: a lease cannot take units ahead) in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['lease on a leaky_bucket', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s algorithm=leaky_bucket lease=5%; # HERE\n"),
        '"lease=5%" cannot be used with "algorithm=leaky_bucket" (a leaky bucket spaces each request: a lease cannot take units ahead) in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['lease on gcra', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s algorithm=gcra burst=2 lease=100%; # HERE\n"),
        '"lease=100%" cannot be used with "algorithm=leaky_bucket" (a leaky bucket spaces each request: a lease cannot take units ahead) in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['lease with overrides', http_conf("    redis_ratelimit_zone \$a zone=z rate=1r/s overrides=on lease=10%; # HERE\n"),
        '"lease=10%" and "overrides=on" together are not supported in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['lease not a number', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s lease=x%; # HERE\n"),
        'invalid lease value "lease=x%" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease of a bare %', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s lease=%; # HERE\n"),
        'invalid lease value "lease=%" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease empty', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s lease=; # HERE\n"),
        'invalid lease value "lease=" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease not whole', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s lease=10.5%; # HERE\n"),
        'invalid lease value "lease=10.5%" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease negative', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s lease=-5%; # HERE\n"),
        'invalid lease value "lease=-5%" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease "on"', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s lease=on; # HERE\n"),
        'invalid lease value "lease=on" in "redis_ratelimit_zone" directive, it must be "off" or a percentage from 1% to 100% in FILE:LINE'],
    ['lease on sliding_log', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s algorithm=sliding_log lease=10%; # HERE\n"),
        '"lease=10%" cannot be used with "algorithm=sliding_log" (a sliding_log keeps each request\'s own time: a lease cannot take units ahead) in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['lease with overrides=on after it', http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/s algorithm=token_bucket lease=50% overrides=on; # HERE\n"),
        '"lease=50%" and "overrides=on" together are not supported in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['zone in a server', http_conf("    server {\n        redis_ratelimit_zone \$a zone=z rate=1r/s; # HERE\n    }\n"),
        '"redis_ratelimit_zone" directive is not allowed here in FILE:LINE'],

    ['unknown server parameter',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 foo=1; # HERE\n}\n",
        'invalid parameter "foo=1" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['zero timeout',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 timeout=0; # HERE\n}\n",
        'invalid timeout "timeout=0" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['bad connect_timeout',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 connect_timeout=soon; # HERE\n}\n",
        'invalid timeout "connect_timeout=soon" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['bad db',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 db=x; # HERE\n}\n",
        'invalid db "db=x" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['bad port',
        "http {\n    redis_ratelimit_server 127.0.0.1:99999; # HERE\n}\n",
        'invalid port in "127.0.0.1:99999" of the "redis_ratelimit_server" directive in FILE:LINE'],
    ['duplicate server',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379;\n    redis_ratelimit_server 127.0.0.1:6380; # HERE\n}\n",
        '"redis_ratelimit_server" directive is duplicate in FILE:LINE'],
    ['several addresses without a mode',
        "http {\n    redis_ratelimit_server 127.0.0.1:7000 127.0.0.1:7001; # HERE\n}\n",
        'several addresses in "redis_ratelimit_server" directive need "cluster" or "sentinel=NAME" in FILE:LINE'],
    ['db= with cluster',
        "http {\n    redis_ratelimit_server 127.0.0.1:7000 cluster db=1; # HERE\n}\n",
        '"db=" cannot be used with "cluster" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['db=0 with cluster',
        "http {\n    redis_ratelimit_server 127.0.0.1:7000 db=0 cluster; # HERE\n}\n",
        '"db=" cannot be used with "cluster" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['cluster and sentinel',
        "http {\n    redis_ratelimit_server 127.0.0.1:7000 cluster sentinel=m; # HERE\n}\n",
        'invalid parameter "sentinel=m" in "redis_ratelimit_server" directive, "cluster" and "sentinel=" exclude each other in FILE:LINE'],
    ['cluster twice',
        "http {\n    redis_ratelimit_server 127.0.0.1:7000 cluster cluster; # HERE\n}\n",
        'duplicate parameter "cluster" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['sentinel without a name',
        "http {\n    redis_ratelimit_server 127.0.0.1:26379 sentinel=; # HERE\n}\n",
        'invalid parameter "sentinel=" in "redis_ratelimit_server" directive, sentinel= needs the name of the primary in FILE:LINE'],
    ['sentinel_password= without sentinel',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 sentinel_password=x; # HERE\n}\n",
        '"sentinel_password=" needs "sentinel=NAME" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['username= without password=',
        "http {\n    redis_ratelimit_server 127.0.0.1:6379 username=u; # HERE\n}\n",
        '"username=" needs "password=" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['an address after the parameters',
        "http {\n    redis_ratelimit_server 127.0.0.1:7000 cluster 127.0.0.1:7001; # HERE\n}\n",
        'invalid parameter "127.0.0.1:7001" in "redis_ratelimit_server" directive in FILE:LINE'],
    ['a bad seed',
        "http {\n    redis_ratelimit_server 127.0.0.1:7000 127.0.0.1:70001 cluster; # HERE\n}\n",
        'invalid port in "127.0.0.1:70001" of the "redis_ratelimit_server" directive in FILE:LINE'],
    ['no address',
        "http {\n    redis_ratelimit_server cluster; # HERE\n}\n",
        'no address in "redis_ratelimit_server" directive in FILE:LINE'],

    ['unknown zone in a location', in_location('redis_ratelimit zone=nope; # HERE'),
        'unknown zone "nope" in "redis_ratelimit" directive in FILE:LINE'],
    ['unknown zone at the http level',
        http_conf("    redis_ratelimit zone=nope; # HERE\n    server { listen 127.0.0.1:%%PORT%%; }\n"),
        'unknown zone "nope" in "redis_ratelimit" directive in FILE:LINE'],
    ['unknown redis_ratelimit parameter', in_location('redis_ratelimit zone=z foo=1; # HERE'),
        'invalid parameter "foo=1" in "redis_ratelimit" directive in FILE:LINE'],
    ['redis_ratelimit without zone', in_location('redis_ratelimit cost=1; # HERE'),
        '"redis_ratelimit" must have "zone" parameter in FILE:LINE'],
    ['same zone twice', in_location("redis_ratelimit zone=z;\n            redis_ratelimit zone=z; # HERE"),
        'zone "z" is duplicate in "redis_ratelimit" directive in FILE:LINE'],
    ['cost of zero', in_location('redis_ratelimit zone=z cost=0; # HERE'),
        'invalid cost "cost=0" in "redis_ratelimit" directive, it must be a number from 1 to 1000000000 or a variable in FILE:LINE'],
    ['cost over the capacity', in_location('redis_ratelimit zone=z cost=6; # HERE'),
        'cost=6 is more than zone "z" can ever allow (5) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity with burst',
        http_conf("    redis_ratelimit_zone \$a zone=b rate=5r/m burst=2;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=b cost=8; # HERE\n    }\n"),
        'cost=8 is more than zone "b" can ever allow (7) in "redis_ratelimit" directive in FILE:LINE'],

    # a constant cost over what each algorithm can ever allow (X-RateLimit-Limit)
    ['cost over the capacity, fixed_window',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=fixed_window burst=1;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=7; # HERE\n    }\n"),
        'cost=7 is more than zone "c" can ever allow (6) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, sliding_log',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=sliding_log burst=1;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=7; # HERE\n    }\n"),
        'cost=7 is more than zone "c" can ever allow (6) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, sliding_window (the default)',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=6; # HERE\n    }\n"),
        'cost=6 is more than zone "c" can ever allow (5) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, sliding_window with burst',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=sliding_window burst=3;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=9; # HERE\n    }\n"),
        'cost=9 is more than zone "c" can ever allow (8) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, token_bucket: the bucket is N',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=token_bucket;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=6; # HERE\n    }\n"),
        'cost=6 is more than zone "c" can ever allow (5) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, token_bucket: the bucket is burst, not N + burst',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=token_bucket burst=2;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=3; # HERE\n    }\n"),
        'cost=3 is more than zone "c" can ever allow (2) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, token_bucket: a bucket larger than N',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=token_bucket burst=9;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=10; # HERE\n    }\n"),
        'cost=10 is more than zone "c" can ever allow (9) in "redis_ratelimit" directive in FILE:LINE'],
    # delay=D (limit_req's): leaky_bucket only, at most the zone's burst;
    # the zone defined after the location, checked once it is known
    ['delay on fixed_window',
        http_conf("    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=fw delay=1; # HERE\n    }\n"
            . "    redis_ratelimit_zone \$a zone=fw rate=5r/s algorithm=fixed_window burst=3;\n"),
        '"delay=1" is only valid with algorithm=leaky_bucket (gcra), zone "fw" uses fixed_window, in "redis_ratelimit" directive in FILE:LINE'],
    ['delay on the default sliding_window',
        in_location('redis_ratelimit zone=z delay=0; # HERE'),
        '"delay=0" is only valid with algorithm=leaky_bucket (gcra), zone "z" uses sliding_window, in "redis_ratelimit" directive in FILE:LINE'],
    ['delay above the burst',
        http_conf("    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=lb delay=4; # HERE\n    }\n"
            . "    redis_ratelimit_zone \$a zone=lb rate=10r/s algorithm=gcra burst=3;\n"),
        '"delay=4" is more than the burst (3) of zone "lb" in "redis_ratelimit" directive in FILE:LINE'],
    ['delay with no burst',
        http_conf("    redis_ratelimit_zone \$a zone=lb rate=10r/s algorithm=leaky_bucket;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=lb delay=1; # HERE\n    }\n"),
        '"delay=1" is more than the burst (0) of zone "lb" in "redis_ratelimit" directive in FILE:LINE'],
    ['delay twice', in_location('redis_ratelimit zone=z delay=1 delay=1; # HERE'),
        'duplicate parameter "delay=1" in "redis_ratelimit" directive in FILE:LINE'],
    ['nodelay twice', in_location('redis_ratelimit zone=z nodelay nodelay; # HERE'),
        'duplicate parameter "nodelay" in "redis_ratelimit" directive in FILE:LINE'],
    # settle=VALUE (issue 17): a value, once
    ['settle with no value', in_location('redis_ratelimit zone=z settle=; # HERE'),
        'invalid parameter "settle=" in "redis_ratelimit" directive in FILE:LINE'],
    ['settle twice', in_location('redis_ratelimit zone=z settle=$bytes_sent settle=$request_length; # HERE'),
        'duplicate parameter "settle=$request_length" in "redis_ratelimit" directive in FILE:LINE'],
    ['delay and nodelay', in_location('redis_ratelimit zone=z delay=1 nodelay; # HERE'),
        'conflicting parameter "nodelay" in "redis_ratelimit" directive in FILE:LINE'],
    # each parameter once (issue 25): the last one won, silently
    ['zone twice', in_location('redis_ratelimit zone=z zone=z; # HERE'),
        'duplicate parameter "zone=z" in "redis_ratelimit" directive in FILE:LINE'],
    ['cost twice', in_location('redis_ratelimit zone=z cost=2 cost=3; # HERE'),
        'duplicate parameter "cost=3" in "redis_ratelimit" directive in FILE:LINE'],
    ['a cost and a variable cost', in_location('redis_ratelimit zone=z cost=3 cost=$arg_c; # HERE'),
        'duplicate parameter "cost=$arg_c" in "redis_ratelimit" directive in FILE:LINE'],
    # was "invalid number of arguments": the directive took 3 words at most
    ['two variable costs and settle', in_location('redis_ratelimit cost=$a settle=$s cost=$b zone=z; # HERE'),
        'duplicate parameter "cost=$b" in "redis_ratelimit" directive in FILE:LINE'],
    ['delay after nodelay, with every parameter', in_location('redis_ratelimit zone=z cost=1 settle=$s nodelay delay=1; # HERE'),
        'conflicting parameter "delay=1" in "redis_ratelimit" directive in FILE:LINE'],
    (map {
        my ($first, $second) = @$_;
        ["zone's $first twice",
            http_conf("    redis_ratelimit_zone \$arg_k $first $second zone=z rate=5r/s; # HERE\n"),
            qq{duplicate parameter "$second" in "redis_ratelimit_zone" directive in FILE:LINE}]
    } (['zone=fw', 'zone=tb'], ['rate=1r/s', 'rate=2r/s'],
        ['algorithm=fixed_window', 'algorithm=token_bucket'], ['burst=1', 'burst=2'],
        ['overrides=on', 'overrides=off'], ['lease=10%', 'lease=20%'])),
    (map {
        my ($first, $second) = @$_;
        ["server's $first twice",
            "http {\n    redis_ratelimit_server 127.0.0.1:6379 $first $second; # HERE\n}\n",
            qq{duplicate parameter "$second" in "redis_ratelimit_server" directive in FILE:LINE}]
    } (['timeout=1s', 'timeout=2s'], ['connect_timeout=1s', 'connect_timeout=2s'],
        ['cooldown=1s', 'cooldown=2s'], ['max_failures=1', 'max_failures=2'],
        ['max_parked=1', 'max_parked=2'], ['cluster', 'cluster'],
        ['sentinel=m', 'sentinel=n'], ['tls', 'tls'], ['tls_ca=a.pem', 'tls_ca=b.pem'],
        ['tls_cert=a.pem', 'tls_cert=b.pem'], ['tls_key=a.pem', 'tls_key=b.pem'],
        ['tls_server_name=a', 'tls_server_name=b'], ['tls_verify=on', 'tls_verify=off'],
        ['sentinel_tls=on', 'sentinel_tls=off'], ['password=a', 'password=b'],
        ['username=a', 'username=b'], ['sentinel_password=a', 'sentinel_password=b'],
        ['db=1', 'db=2'])),
    ['the metrics with a value', in_location('redis_ratelimit_metrics on; # HERE'),
        'invalid number of arguments in "redis_ratelimit_metrics" directive in FILE:LINE'],
    ['delay not a number', in_location('redis_ratelimit zone=z delay=-1; # HERE'),
        'invalid value "delay=-1" in "redis_ratelimit" directive, delay must be a number in FILE:LINE'],
    ['cost over the capacity, leaky_bucket: burst 0 allows 1',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=leaky_bucket;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=2; # HERE\n    }\n"),
        'cost=2 is more than zone "c" can ever allow (1) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, leaky_bucket: burst B allows B + 1',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=leaky_bucket burst=3;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=5; # HERE\n    }\n"),
        'cost=5 is more than zone "c" can ever allow (4) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, gcra: as leaky_bucket',
        http_conf("    redis_ratelimit_zone \$a zone=c rate=5r/m algorithm=gcra burst=3;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        redis_ratelimit zone=c cost=5; # HERE\n    }\n"),
        'cost=5 is more than zone "c" can ever allow (4) in "redis_ratelimit" directive in FILE:LINE'],
    ['cost over the capacity, leaky_bucket zone defined after its use',
        http_conf("    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        location / {\n            redis_ratelimit zone=later cost=3; # HERE\n        }\n    }\n"
            . "    redis_ratelimit_zone \$a zone=later rate=100r/s algorithm=leaky_bucket burst=1;\n"),
        'cost=3 is more than zone "later" can ever allow (2) in "redis_ratelimit" directive in FILE:LINE'],

    ['status 399', in_location('redis_ratelimit_status 399; # HERE'),
        'invalid value "399" in "redis_ratelimit_status" directive, it must be a status code from 400 to 599 in FILE:LINE'],
    ['status 600', in_location('redis_ratelimit_status 600; # HERE'),
        'invalid value "600" in "redis_ratelimit_status" directive, it must be a status code from 400 to 599 in FILE:LINE'],
    ['status not a number', in_location('redis_ratelimit_status slow; # HERE'),
        'invalid value "slow" in "redis_ratelimit_status" directive, it must be a status code from 400 to 599 in FILE:LINE'],
    ['status twice', in_location("redis_ratelimit_status 429;\n            redis_ratelimit_status 503; # HERE"),
        '"redis_ratelimit_status" directive is duplicate in FILE:LINE'],
    ['bad fail value', in_location('redis_ratelimit_fail x; # HERE'),
        'invalid value "x" in "redis_ratelimit_fail" directive, it must be "open", "closed" or "local" in FILE:LINE'],
    ['bad headers value', in_location('redis_ratelimit_headers standard; # HERE'),
        'invalid value "standard" in "redis_ratelimit_headers" directive, it must be "off", "legacy", "draft" or "both" in FILE:LINE'],
    ['headers without a value', in_location('redis_ratelimit_headers; # HERE'),
        'invalid number of arguments in "redis_ratelimit_headers" directive in FILE:LINE'],
    ['headers twice', in_location("redis_ratelimit_headers draft;\n            redis_ratelimit_headers both; # HERE"),
        '"redis_ratelimit_headers" directive is duplicate in FILE:LINE'],
    ['bad problem_json value', in_location('redis_ratelimit_problem_json json; # HERE'),
        'invalid value "json" in "redis_ratelimit_problem_json" directive, it must be "on" or "off" in FILE:LINE'],
    ['problem_json twice', in_location("redis_ratelimit_problem_json on;\n            redis_ratelimit_problem_json off; # HERE"),
        '"redis_ratelimit_problem_json" directive is duplicate in FILE:LINE'],
    ['problem_json with two values', http_conf("    redis_ratelimit_problem_json on on; # HERE\n"),
        'invalid number of arguments in "redis_ratelimit_problem_json" directive in FILE:LINE'],
    ['bad log level', in_location('redis_ratelimit_log_level debug; # HERE'),
        'invalid value "debug" in "redis_ratelimit_log_level" directive, it must be "info", "notice", "warn" or "error" in FILE:LINE'],
    ['bad dry_run value', in_location('redis_ratelimit_dry_run maybe; # HERE'),
        'invalid value "maybe" in "redis_ratelimit_dry_run" directive, it must be "on" or "off" in FILE:LINE'],
    ['server in a location', in_location('redis_ratelimit_server 127.0.0.1:6379; # HERE'),
        '"redis_ratelimit_server" directive is not allowed here in FILE:LINE'],

    ['deny cache too small', http_conf("    redis_ratelimit_deny_cache 16k; # HERE\n"),
        'invalid value "16k" in "redis_ratelimit_deny_cache" directive, it must be "off" or a size of at least 32k in FILE:LINE'],
    ['deny cache of zero', http_conf("    redis_ratelimit_deny_cache 0; # HERE\n"),
        'invalid value "0" in "redis_ratelimit_deny_cache" directive, it must be "off" or a size of at least 32k in FILE:LINE'],
    ['deny cache not a size', http_conf("    redis_ratelimit_deny_cache lots; # HERE\n"),
        'invalid value "lots" in "redis_ratelimit_deny_cache" directive, it must be "off" or a size of at least 32k in FILE:LINE'],
    ['deny cache "on"', http_conf("    redis_ratelimit_deny_cache on; # HERE\n"),
        'invalid value "on" in "redis_ratelimit_deny_cache" directive, it must be "off" or a size of at least 32k in FILE:LINE'],
    ['deny cache twice', http_conf("    redis_ratelimit_deny_cache 1m;\n    redis_ratelimit_deny_cache off; # HERE\n"),
        '"redis_ratelimit_deny_cache" directive is duplicate in FILE:LINE'],
    ['deny cache in a server', http_conf("    server {\n        redis_ratelimit_deny_cache 1m; # HERE\n    }\n"),
        '"redis_ratelimit_deny_cache" directive is not allowed here in FILE:LINE'],
    ['deny cache in a location', in_location('redis_ratelimit_deny_cache off; # HERE'),
        '"redis_ratelimit_deny_cache" directive is not allowed here in FILE:LINE'],

    # the module's own zones and other modules' are no local_zone
    ['local_zone named like the metrics zone',
        http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/m;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        location = /metrics { redis_ratelimit_metrics; }\n"
            . "        location / {\n            redis_ratelimit zone=z;\n"
            . "            redis_ratelimit_fail local local_zone=redis_ratelimit_metrics:256k; # HERE\n"
            . "        }\n    }\n"),
        'invalid value "local_zone=redis_ratelimit_metrics:256k" in "redis_ratelimit_fail" directive, zone "redis_ratelimit_metrics" is the module\'s own in FILE:LINE'],
    ['local_zone named like the metrics zone, metrics after it',
        http_conf("    redis_ratelimit_zone \$a zone=z rate=5r/m;\n"
            . "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
            . "        location / {\n            redis_ratelimit zone=z;\n"
            . "            redis_ratelimit_fail local local_zone=redis_ratelimit_metrics:256k; # HERE\n"
            . "        }\n"
            . "        location = /metrics { redis_ratelimit_metrics; }\n    }\n"),
        'invalid value "local_zone=redis_ratelimit_metrics:256k" in "redis_ratelimit_fail" directive, zone "redis_ratelimit_metrics" is the module\'s own in FILE:LINE'],
    ['local_zone named like the deny cache',
        in_location('redis_ratelimit_fail local local_zone=redis_ratelimit_deny:1m; # HERE'),
        'invalid value "local_zone=redis_ratelimit_deny:1m" in "redis_ratelimit_fail" directive, zone "redis_ratelimit_deny" is the module\'s own in FILE:LINE'],
    ['local_zone named like a limit_req zone',
        http_conf("    limit_req_zone \$a zone=shared:1m rate=1r/s;\n" . $srv =~ s/%%LINE%%/redis_ratelimit_fail local local_zone=shared:1m; # HERE/r),
        'the shared memory zone "shared" is already declared for a different use in FILE:LINE'],

    # sliding_log keeps a member per unit: N + burst at most 10000
    ['sliding_log over its capacity bound',
        http_conf("    redis_ratelimit_zone \$a zone=z rate=10000r/m burst=1 algorithm=sliding_log; # HERE\n"),
        '"rate=10000r/m" with "burst=1" allows 10001 requests a period, "algorithm=sliding_log" at most 10000 in "redis_ratelimit_zone" directive in FILE:LINE'],
    ['sliding_log over its capacity bound, by rate',
        http_conf("    redis_ratelimit_zone \$a zone=z algorithm=sliding_log rate=200000r/h; # HERE\n"),
        '"rate=200000r/h" with "burst=0" allows 200000 requests a period, "algorithm=sliding_log" at most 10000 in "redis_ratelimit_zone" directive in FILE:LINE'],
);

for my $case (@bad) {
    my ($name, $template, $want) = @$case;
    my ($out, $rc);
    ($out, $rc, undef, undef, $want) = $t->nginx_t_here($template, $want);

    isnt($rc, 0, "$name: nginx -t fails");
    like($out, qr/^nginx: \[emerg\] \Q$want\E$/m, "$name: message")
        or diag("expected: nginx: [emerg] $want");
    like($out, qr/test failed/, "$name: test failed");
}

# zones without a server: a message of its own

{
    my ($out, $rc, $file, $text) =
        $t->nginx_t("http {\n    redis_ratelimit_zone \$a zone=z rate=5r/m;\n}\n");
    my $line = RRL::Test::line_of($text, qr/zone=z/);
    isnt($rc, 0, 'zone without a server: nginx -t fails');
    like($out, qr/^nginx: \[emerg\] "redis_ratelimit_zone" is used in \Q$file\E:$line, but no "redis_ratelimit_server" is defined$/m,
        'zone without a server: message');
}

# good configurations

my @good = (
    ['every directive and option', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379 timeout=50ms connect_timeout=1s password=secret db=2;
    redis_ratelimit_zone $binary_remote_addr zone=ip rate=10r/s;
    redis_ratelimit_zone $arg_user zone=user rate=100r/m algorithm=sliding_log burst=20;
    redis_ratelimit_zone "$host:$uri" zone=page rate=5r/1m30s algorithm=fixed_window;
    redis_ratelimit_zone $arg_k zone=hourly rate=1000r/h burst=0;
    redis_ratelimit_zone $arg_k zone=daily rate=1r/d;
    redis_ratelimit_zone $arg_k zone=tens rate=3r/10s;
    redis_ratelimit_zone $arg_k zone=log_at_its_bound rate=9990r/h burst=10 algorithm=sliding_log;
    redis_ratelimit_zone $arg_k zone=window_over_it rate=1000000r/s algorithm=sliding_window;
    redis_ratelimit_zone $arg_k zone=overridden rate=10r/m algorithm=token_bucket burst=5 overrides=on;
    redis_ratelimit_zone $arg_k zone=not_overridden overrides=off rate=10r/m;

    redis_ratelimit zone=ip;
    redis_ratelimit_status 503;
    redis_ratelimit_dry_run off;
    redis_ratelimit_headers legacy;
    redis_ratelimit_problem_json off;
    redis_ratelimit_fail open;
    redis_ratelimit_log_level warn;
    redis_ratelimit_deny_cache 10m;

    server {
        listen 127.0.0.1:%%PORT%%;
        redis_ratelimit zone=user cost=$arg_cost;
        redis_ratelimit zone=page cost=5;
        redis_ratelimit_status 444;

        location / {
            redis_ratelimit zone=hourly cost=1000;
            redis_ratelimit zone=daily;
            redis_ratelimit zone=tens;
            redis_ratelimit_status 429;
            redis_ratelimit_dry_run on;
            redis_ratelimit_headers off;
            redis_ratelimit_fail closed;
            redis_ratelimit_log_level info;
        }
        location /notice/ {
            redis_ratelimit_log_level notice;
            redis_ratelimit_headers draft;
            redis_ratelimit_problem_json on;
        }
        location /error/ {
            redis_ratelimit_log_level error;
            redis_ratelimit_headers both;
            redis_ratelimit_status 599;
        }
    }
}
EOF2
    ['a zone defined after its use', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            redis_ratelimit zone=later cost=7;
        }
    }
    redis_ratelimit_zone $arg_k zone=later rate=5r/m burst=2;
}
EOF2
    ['a cluster, with ACL credentials', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:7000 127.0.0.1:7001 [::1]:7002 cluster username=limiter password=secret timeout=50ms;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
}
EOF2
    ['a cluster of one seed', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:7000 cluster;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
}
EOF2
    ['sentinels', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:26379 127.0.0.1:26380 localhost:26381 sentinel=mymaster password=p sentinel_password=sp db=3;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
}
EOF2
    ['a single Redis with an ACL user', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379 username=limiter password=secret;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
}
EOF2
    ['a unix socket server', <<'EOF2'],
http {
    redis_ratelimit_server unix:/tmp/redis.sock;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
}
EOF2
    ['every algorithm, and gcra, at its largest constant cost', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone $arg_k zone=fw rate=5r/m algorithm=fixed_window burst=1;
    redis_ratelimit_zone $arg_k zone=sl rate=5r/m algorithm=sliding_log burst=1;
    redis_ratelimit_zone $arg_k zone=sw rate=5r/m algorithm=sliding_window burst=1;
    redis_ratelimit_zone $arg_k zone=dflt rate=5r/m burst=1;
    redis_ratelimit_zone $arg_k zone=tb rate=5r/m algorithm=token_bucket;
    redis_ratelimit_zone $arg_k zone=tb2 rate=5r/m algorithm=token_bucket burst=2;
    redis_ratelimit_zone $arg_k zone=tb1 rate=5r/m algorithm=token_bucket burst=1;
    redis_ratelimit_zone $arg_k zone=lb rate=5r/m algorithm=leaky_bucket;
    redis_ratelimit_zone $arg_k zone=lb0 rate=5r/m algorithm=leaky_bucket burst=0;
    redis_ratelimit_zone $arg_k zone=lb3 rate=5r/m algorithm=leaky_bucket burst=3;
    redis_ratelimit_zone $arg_k zone=gcra rate=5r/m algorithm=gcra burst=3;
    redis_ratelimit_zone $arg_k zone=sw0 rate=5r/m algorithm=sliding_window burst=0;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /fw/ { redis_ratelimit zone=fw cost=6; }
        location /sl/ { redis_ratelimit zone=sl cost=6; }
        location /sw/ { redis_ratelimit zone=sw cost=6; }
        location /dflt/ { redis_ratelimit zone=dflt cost=6; }
        location /tb/ { redis_ratelimit zone=tb cost=5; }
        location /tb2/ { redis_ratelimit zone=tb2 cost=2; }
        location /tb1/ { redis_ratelimit zone=tb1 cost=1; }
        location /lb/ { redis_ratelimit zone=lb cost=1; }
        location /lb0/ { redis_ratelimit zone=lb0; }
        location /lb3/ { redis_ratelimit zone=lb3 cost=4; }
        location /gcra/ { redis_ratelimit zone=gcra cost=4; }
        location /sw0/ { redis_ratelimit zone=sw0 cost=5; }
        location /var/ { redis_ratelimit zone=lb cost=$arg_cost; }
    }
}
EOF2
    ['delay= on leaky_bucket and gcra up to the burst, nodelay anywhere', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /d0/ { redis_ratelimit zone=lb delay=0; }
        location /db/ { redis_ratelimit zone=lb delay=5 cost=2; }
        location /g/ { redis_ratelimit zone=g delay=2; }
        location /nd/ { redis_ratelimit zone=fw nodelay; redis_ratelimit zone=lb nodelay; }
    }
    redis_ratelimit_zone $arg_k zone=lb rate=10r/s algorithm=leaky_bucket burst=5;
    redis_ratelimit_zone $arg_k zone=g rate=10r/s algorithm=gcra burst=2;
    redis_ratelimit_zone $arg_k zone=fw rate=10r/s algorithm=fixed_window;
}
EOF2
    # every parameter of each directive at once: none is refused by count
    ['every parameter at once', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379 timeout=50ms connect_timeout=1s cooldown=1s max_failures=3 max_parked=10 username=u password=p db=1;
    redis_ratelimit_zone $arg_k zone=tb rate=5r/m algorithm=token_bucket burst=9 overrides=off lease=10%;
    redis_ratelimit_zone $arg_k zone=lb rate=10r/s algorithm=leaky_bucket burst=5 overrides=on lease=off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location /lb/ {
            redis_ratelimit zone=lb cost=$arg_c settle=$bytes_sent delay=2;
            redis_ratelimit zone=tb cost=2 settle=$bytes_sent nodelay;
            redis_ratelimit_fail local local_zone=l:1m local_share=1/2;
        }
    }
}
EOF2
    ['overrides on and off', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone $arg_k zone=on rate=5r/m overrides=on;
    redis_ratelimit_zone $arg_k zone=off rate=5r/m algorithm=token_bucket overrides=off burst=2;
}
EOF2
    ['leases on, and off', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone $arg_k zone=fw rate=5r/m algorithm=fixed_window lease=10%;
    redis_ratelimit_zone $arg_k zone=sw rate=5r/m lease=1%;
    redis_ratelimit_zone $arg_k zone=tb rate=5r/m algorithm=token_bucket burst=9 lease=100%;
    redis_ratelimit_zone $arg_k zone=log rate=5r/m algorithm=sliding_log lease=off overrides=on;
}
EOF2
    ['the deny cache off', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_deny_cache off;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
}
EOF2
    ['the smallest deny cache, after the zones', <<'EOF2'],
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone $arg_k zone=z rate=5r/m;
    redis_ratelimit_deny_cache 32k;
}
EOF2
    ['a deny cache without zones', <<'EOF2'],
http {
    redis_ratelimit_deny_cache 2m;
    server {
        listen 127.0.0.1:%%PORT%%;
    }
}
EOF2
    ['the module loaded, not used', <<'EOF2'],
http {
    server {
        listen 127.0.0.1:%%PORT%%;
    }
}
EOF2
);

for my $case (@good) {
    my ($name, $template) = @$case;
    my ($out, $rc) = $t->nginx_t($template);
    is($rc, 0, "$name: nginx -t passes") or diag($out);
    like($out, qr/syntax is ok/, "$name: syntax is ok");
    like($out, qr/test is successful/, "$name: test is successful");
    unlike($out, qr/\[(warn|emerg|alert|crit)\]/, "$name: no warning");
}

$t->done_testing;
