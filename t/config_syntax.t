#!/usr/bin/perl

# The grammar the documents give, against what nginx -t accepts:
# - zone names: the boundary characters accepted (! and ~, every printable
#   ASCII character but {, } and :, quoted ones) and refused (blank, tab,
#   braces, colon, DEL, bytes outside ASCII, UTF-8), with their message;
# - periods: a unit alone (s, m, h, d, w), times of several units, a bare
#   number (seconds), and the ones refused (ms alone, y, M, a unit twice or
#   out of order, blanks, capitals);
# - each directive's syntax line: every parameter of a line at once is
#   accepted (redis_ratelimit with cost=, settle= and delay=; the server's
#   every parameter, its TLS ones on a module built with TLS);
# - the syntax lines of README.md and docs/ngx_http_redis_ratelimit_module.md
#   name the same parameters and keywords for each directive, every
#   directive of the module has both, with the Context of its command and
#   the same Default, every parameter the core's parsers
#   know (src/core/**/*_conf.cpp) is in both, and every keyword of the
#   README's line is one that the sources know.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;
use RRL::Tls;

my $t = RRL::Test->new;
my $repo = "$FindBin::Bin/..";

sub zone_conf {
    my ($word) = @_;
    return "http {\n    redis_ratelimit_server 127.0.0.1:6379;\n"
        . "    redis_ratelimit_zone \$arg_k $word rate=1r/s; # HERE\n}\n";
}

sub passes {
    my ($name, $conf) = @_;
    my ($out, $rc) = $t->nginx_t($conf);
    is($rc, 0, "$name: nginx -t passes") or diag($out);
}

sub refused {
    my ($name, $conf, $want) = @_;
    my ($out, $rc, $file, $line) = $t->nginx_t_here($conf);
    isnt($rc, 0, "$name: nginx -t fails");
    like($out, qr/^nginx: \[emerg\] \Q$want\E in \Q$file\E:$line$/m,
        "$name: message") or diag("expected: $want\n$out");
}

############################################################################
# zone names

my $printable = join '', grep { !/[{}:;"'\\]/ } map { chr } 0x21 .. 0x7e;
for my $case (
    ['"!", the first printable character', 'zone=!'],
    ['"~", the last', 'zone=~'],
    ['every printable character but {, }, :, ;, quotes and \\', "zone=$printable"],
    ['a ";" quoted', '"zone=a;b"'],
    ['a double quote', q{"zone=a\"b"}],
    ['a single quote', q{"zone=a'b"}],
    ['a backslash', q{'zone=a\\\\b'}],
    ['a "#" inside the word', 'zone=a#b'],
    ['200 characters', 'zone=' . ('z' x 200)])
{
    passes("zone name: $case->[0]", zone_conf($case->[1]));
}

for my $case (
    ['a blank', '"zone=a b"', 'a b'],
    ['a tab', '"zone=a\tb"', "a\tb"],
    ['an opening brace', '"zone=a{b"', 'a{b'],
    ['a closing brace', '"zone=a}b"', 'a}b'],
    ['a colon', 'zone=a:b', 'a:b'],
    ['a colon alone', 'zone=:', ':'],
    ['DEL (0x7f)', "zone=a\x7fb", "a\x7fb"],
    ['UTF-8', "zone=caf\xc3\xa9", "caf\xc3\xa9"],
    ['a byte 0x80', "zone=a\x80", "a\x80"],
    ['nothing', 'zone=', ''])
{
    refused("zone name: $case->[0]", zone_conf($case->[1]),
        qq{invalid zone name "$case->[2]" in "redis_ratelimit_zone" directive});
}

############################################################################
# periods

sub rate_conf {
    my ($rate) = @_;
    return "http {\n    redis_ratelimit_server 127.0.0.1:6379;\n"
        . "    redis_ratelimit_zone \$arg_k zone=z rate=$rate; # HERE\n}\n";
}

for my $rate (qw(5r/s 5r/m 5r/h 5r/d 5r/w 5r/1w 5r/52w 5r/10s 5r/1m30s 5r/1m30
    5r/10 5r/500ms 5r/1ms 5r/1h30m 5r/1d12h 5r/1w1d1h1m1s1ms 1000000000r/s))
{
    passes("rate=$rate", rate_conf($rate));
}

for my $rate ('5r/ms', '5r/1y', '5r/1M', '5r/W', '5r/1s1s', '5r/30s1m',
    '5r/1h 30m', '5r/0', '5r/', '5r/53w', '0r/s', '1000000001r/s')
{
    my $word = $rate =~ / / ? qq{"rate=$rate"} : "rate=$rate";
    (my $conf = rate_conf($rate)) =~ s/rate=\Q$rate\E/$word/;
    refused("rate=$rate", $conf,
        qq{invalid rate "rate=$rate" in "redis_ratelimit_zone" directive});
}

############################################################################
# each syntax line's parameters at once

passes('redis_ratelimit with zone=, cost=, settle= and delay=', <<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone $arg_k zone=lb rate=10r/s burst=5 algorithm=leaky_bucket;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            redis_ratelimit zone=lb cost=2 settle=$bytes_sent delay=1;
        }
        location /var/ {
            redis_ratelimit zone=lb cost=$arg_c settle=$bytes_sent nodelay;
        }
    }
}
EOF

passes('redis_ratelimit_zone with every parameter', <<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone $arg_k zone=a rate=10r/s algorithm=token_bucket burst=5 overrides=off lease=10%;
    redis_ratelimit_zone $arg_k zone=b rate=10r/s algorithm=gcra burst=5 overrides=on lease=off;
}
EOF

passes('redis_ratelimit_fail with every parameter', <<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone $arg_k zone=z rate=10r/s;
    redis_ratelimit_fail local local_zone=lz:1m local_share=1/2;
}
EOF

passes('redis_ratelimit_server with every parameter but TLS', <<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:26379 127.0.0.1:26380 sentinel=m
        username=u password=p sentinel_password=sp db=1 timeout=1s
        connect_timeout=1s max_failures=3 cooldown=1s max_parked=10;
}
EOF

{
    my $tls = "http {\n    redis_ratelimit_server 127.0.0.1:26379 sentinel=m tls"
        . " tls_ca=CA tls_cert=CERT tls_key=KEY tls_server_name=redis.example"
        . " tls_verify=off sentinel_tls=off; # HERE\n}\n";
    if (RRL::Test::hiredis_major() >= 1) {
        my $ca = RRL::Tls::ca($t, 'ca');
        my $cli = RRL::Tls::cert($t, $ca, 'client', client => 1);
        $tls =~ s/=CA\b/=$ca->{cert}/;
        $tls =~ s/=CERT\b/=$cli->{cert}/;
        $tls =~ s/=KEY\b/=$cli->{key}/;
        passes('redis_ratelimit_server with every TLS parameter', $tls);
    } else {
        refused('redis_ratelimit_server with every TLS parameter, no TLS built', $tls,
            '"tls" in "redis_ratelimit_server" directive needs a module built '
            . 'with hiredis >= 1.0 with TLS (hiredis_ssl); this one was built '
            . 'without it');
    }
}

############################################################################
# the syntax lines of both documents

sub read_text {
    my ($path) = @_;
    open my $fh, '<', $path or die "$path: $!";
    local $/;
    return scalar <$fh>;
}

# directive => its syntax, from a README ``` block or the page's table row
sub readme_syntax {
    my %s;
    my $text = read_text("$repo/README.md");
    while ($text =~ /^###+ (redis_ratelimit\w*)\n+```\n(Syntax:.*?)^Default:/msg) {
        my ($d, $v) = ($1, $2);
        $s{$d} = $v =~ s/\s+/ /gr;
    }
    return \%s;
}

sub page_syntax {
    my %s;
    my $text = read_text("$repo/docs/ngx_http_redis_ratelimit_module.md");
    while ($text =~ /^### (redis_ratelimit\w*)\n.*?^\| \*\*Syntax:\*\* \| `(.*?)` \|$/msg) {
        my ($d, $v) = ($1, $2);
        $s{$d} = $v =~ s/\\\|/|/gr;
    }
    return \%s;
}

# the parameters (name=) and the lowercase keywords of a syntax
sub params { my ($s) = @_; my %p = map { $_ => 1 } $s =~ /\b([a-z_]+=)/g; return \%p; }

sub keywords {
    my ($s) = @_;
    $s =~ s/^Syntax:\s*//;
    my (undef, @w) = split /[\s\[\]|;]+/, $s;
    my %k = map { $_ => 1 } grep { /^[a-z_]+$/ } map { s/^[a-z_]+=//r } @w;
    return \%k;
}

my $readme = readme_syntax();
my $page = page_syntax();
my @module = read_text("$repo/src/ngx/ngx_http_redis_ratelimit_module.c")
    =~ /ngx_string\("(redis_ratelimit\w*)"\)/g;
cmp_ok(scalar(@module), '>=', 11, 'the module\'s directives are read');

for my $d (sort { $a cmp $b } @module) {
    ok($readme->{$d}, "$d: README.md has its syntax") or next;
    ok($page->{$d}, "$d: the directive page has its syntax") or next;
    is(join(' ', sort keys %{ params($page->{$d}) }),
        join(' ', sort keys %{ params($readme->{$d}) }),
        "$d: both documents name the same parameters");
    my $pk = keywords($page->{$d});
    my @missing = grep { !$pk->{$_} } sort keys %{ keywords($readme->{$d}) };
    is("@missing", '', "$d: the README's keywords are in the directive page's line");
}
for my $d (sort keys %$readme, sort keys %$page) {
    ok(grep({ $_ eq $d } @module), "$d: a directive of the module");
}

# Context: as the command table says; Default: the same in both documents
my $table = read_text("$repo/src/ngx/ngx_http_redis_ratelimit_module.c");
my %names = (MAIN => 'http', SRV => 'server', LOC => 'location');
while ($table =~ /ngx_string\("(redis_ratelimit\w*)"\),\s*([^,]+),/g) {
    my ($d, $flags) = ($1, $2);
    my $want = join ', ', map { $names{$_} } grep { $flags =~ /NGX_HTTP_${_}_CONF\b/ }
        qw(MAIN SRV LOC);
    my $readme_text = read_text("$repo/README.md");
    my $page_text = read_text("$repo/docs/ngx_http_redis_ratelimit_module.md");
    my ($rc, $rd) = $readme_text =~ /^###+ \Q$d\E\n+```\n.*?^Default:\s*(.*?)\n^Context:\s*(.*?)\n/ms
        ? ($2, $1) : ('', '');
    my ($pd, $pc) = $page_text =~ /^### \Q$d\E\n.*?^\| \*\*Default:\*\* \| (.*?) \|\n^\| \*\*Context:\*\* \| (.*?) \|$/ms
        ? ($1, $2) : ('', '');
    is($rc, $want, "$d: README's Context is the command table's");
    is($pc =~ s/`//gr, $want, "$d: the directive page's Context is the command table's");
    is($pd =~ s/`//gr, $rd, "$d: both documents give the same Default");
}

# every parameter the parsers know is documented, and every word of a
# syntax is one that the sources know
my $sources = join '', map { read_text($_) }
    glob("$repo/src/core/{,*/,*/*/}*.cpp"), glob("$repo/src/ngx/*.c");
my %parsed = map { $_ => 1 } join('', map { read_text($_) }
    glob("$repo/src/core/{,*/,*/*/}*_conf.cpp")) =~ /"([a-z_]+=)"/g;
my %documented = map { %{ params($_) } } values %$readme;
is(join(' ', grep { !$documented{$_} } sort keys %parsed), '',
    'every parameter of the parsers is in a syntax line');
for my $d (sort keys %$readme) {
    my @unknown = grep { index($sources, qq{"$_"}) < 0 }
        sort(keys %{ params($readme->{$d}) }, keys %{ keywords($readme->{$d}) });
    is("@unknown", '', "$d: every parameter and keyword of its syntax is in the sources");
}

$t->done_testing;
