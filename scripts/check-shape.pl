#!/usr/bin/perl

# The shim's shape (issue 13): line counts of src/ngx/, the calls between
# its files, and their layers. Fails (exit 1) on a file over 700 lines, on
# more than 4,500 lines in all, on a cycle of calls between files, or on a
# file that writes a global variable another file defines; prints what it
# found either way.
#
# The core's shape (issue 26): its folders with their files and lines.
# Fails on a file of src/core/ over 700 lines, on a folder of more than 25
# files, on a file outside engine/ that includes hiredis, and on a file
# outside api/ that includes a file of api/ (the C API is the core's edge:
# its headers are for the shim and for api/'s wrappers; tests may include
# them).
#
# A file calls another when its code (comments aside) names a function or a
# global variable that the other defines (at the start of a line, nginx
# style) and it does not. The module object itself, which every file names
# to reach its configuration, is no call.
#
#   scripts/check-shape.pl [--max-total N (4500)] [--core CORE_DIR] [SHIM_DIR]

use strict;
use warnings;

use File::Basename qw(basename dirname);
use File::Find qw(find);
use Cwd qw(abs_path);

use Getopt::Long qw(GetOptions);

my $max_file = 700;
my $max_total = 4500;
my $max_folder = 25;
my $core = dirname(abs_path($0)) . '/../src/core';
GetOptions('max-total=i' => \$max_total, 'core=s' => \$core)
    or die "usage: $0 [--max-total N] [--core CORE_DIR] [SHIM_DIR]\n";
my $dir = $ARGV[0] // dirname(abs_path($0)) . '/../src/ngx';

# A file of the core outside api/ never includes an api/ header: the C
# types and constants it shares with the shim are base/'s rrl_*_types.h,
# the guard base/guard.hpp.

my (%lines, %text, %defines, %globals);
my @files = sort glob("$dir/*.c"), sort glob("$dir/*.h");
die "no shim files in $dir\n" unless @files;

for my $path (@files) {
    my $f = basename($path);
    open my $fh, '<', $path or die "$path: $!\n";
    local $/;
    my $t = <$fh>;
    close $fh;
    $text{$f} = $t;
    $lines{$f} = () = $t =~ /\n/g;
    next unless $f =~ /\.c$/;
    # functions: the name at the start of a line, then "("; globals: a
    # type, blanks, then the name and ";" or " =" at the top level
    $defines{$1} //= $f while $t =~ /^(ngx_http_redis_ratelimit_\w+)\(/mg;
    $defines{$1} //= $f
        while $t =~ /^(?:static\s+)?[a-z_]\w*\s+\**(ngx_http_redis_ratelimit_\w+)(?:\[\w*\])?\s*(?:=|;)/mg;
    $globals{$1} = $f
        while $t =~ /^(?!static)[a-z_]\w*\s+\**(ngx_http_redis_ratelimit_\w+)(?:\[\w*\])?\s*(?:=|;)/mg;
}

my %calls;    # file => {file => [names]}
delete $defines{ngx_http_redis_ratelimit_module};

for my $f (grep { /\.c$/ } keys %text) {
    my %seen;
    (my $code = $text{$f}) =~ s{/\*.*?\*/}{}gs;
    $code =~ s{^#\s*include\b[^\n]*}{}mg;
    while ($code =~ /\b(ngx_http_redis_ratelimit_\w+)\b/g) {
        my $name = $1;
        my $home = $defines{$name} or next;
        next if $home eq $f || $seen{$name}++;
        # a static of another file with the same name is not a call
        next if $text{$home} =~ /^static\s[^\n]*\n?\Q$name\E\(/m
            && $text{$f} =~ /^static\s[^\n]*\n?\Q$name\E\(/m;
        push @{ $calls{$f}{$home} }, $name;
    }
}

# writes to another file's globals: an assignment, ++ or -- to the
# variable or to anything reached from it, or its address taken into a
# pointer that is not const (a write by another name)
my @writes;
for my $f (sort grep { /\.c$/ } keys %text) {
    (my $code = $text{$f}) =~ s{/\*.*?\*/}{}gs;
    for my $g (sort keys %globals) {
        next if $globals{$g} eq $f;
        push @writes, "$f writes $g (of $globals{$g})"
            if $code =~ /(?:\+\+|--)\s*\Q$g\E\b|\b\Q$g\E(?:(?:\.|->)\w+|\[[^\]]*\])*\s*(?:[-+*\/|&^]?=(?!=)|\+\+|--)/
            || $code =~ /^(?![^\n]*\bconst\b)[^\n]*&\s*\Q$g\E\b/m;
    }
}

# cycles: Tarjan's strongly connected components
my ($index, @stack, %on, %idx, %low, @sccs) = (0);
my $visit;
$visit = sub {
    my ($v) = @_;
    $idx{$v} = $low{$v} = $index++;
    push @stack, $v;
    $on{$v} = 1;
    for my $w (sort keys %{ $calls{$v} || {} }) {
        if (!defined $idx{$w}) {
            $visit->($w);
            $low{$v} = $low{$w} if $low{$w} < $low{$v};
        } elsif ($on{$w}) {
            $low{$v} = $idx{$w} if $idx{$w} < $low{$v};
        }
    }
    if ($low{$v} == $idx{$v}) {
        my @c;
        while (1) {
            my $w = pop @stack;
            $on{$w} = 0;
            push @c, $w;
            last if $w eq $v;
        }
        push @sccs, [sort @c] if @c > 1;
    }
};
$visit->($_) for grep { !defined $idx{$_} } sort grep { /\.c$/ } keys %text;

# layers: 0 for a file that calls none, else one above the highest it calls
# (within a cycle, files share the layer of the first reached)
my %layer;
my $depth;
$depth = sub {
    my ($f, $seen) = @_;
    return $layer{$f} if defined $layer{$f};
    return 0 if $seen->{$f}++;
    my $d = 0;
    for my $g (keys %{ $calls{$f} || {} }) {
        my $x = $depth->($g, $seen) + 1;
        $d = $x if $x > $d;
    }
    return $layer{$f} = $d;
};
$depth->($_, {}) for grep { /\.c$/ } keys %text;

my $total = 0;
my $failed = 0;
print "== src/ngx: lines\n";
for my $f (sort { $lines{$b} <=> $lines{$a} } keys %lines) {
    $total += $lines{$f};
    my $over = $lines{$f} > $max_file ? "  over $max_file" : '';
    $failed = 1 if $over;
    printf "%6d  %s%s\n", $lines{$f}, $f, $over;
}
printf "%6d  in all%s\n", $total,
    $total > $max_total ? "  over $max_total" : '';
$failed = 1 if $total > $max_total;

print "== layers (a file calls only those below it)\n";
my $top = 0;
$top = $_ > $top ? $_ : $top for values %layer;
for my $l (reverse 0 .. $top) {
    my @at = sort grep { $layer{$_} == $l } keys %layer;
    printf "%2d: %s\n", $l, join(' ', @at) if @at;
}

print "== calls between files\n";
for my $f (sort keys %calls) {
    for my $g (sort keys %{ $calls{$f} }) {
        my @n = @{ $calls{$f}{$g} };
        printf "%s -> %s: %d (%s%s)\n", $f, $g, scalar @n,
            join(', ', map { s/^ngx_http_redis_ratelimit_//r } @n[0 .. ($#n < 2 ? $#n : 2)]),
            @n > 3 ? ', ...' : '';
    }
}

if (@sccs) {
    print "== cycles\n";
    for my $c (@sccs) {
        print join(' <-> ', @$c), "\n";
    }
    $failed = 1;
}

if (@writes) {
    print "== writes to another file's globals\n";
    print "$_\n" for @writes;
    $failed = 1;
}

# the core: every file under CORE_DIR, by its path there
my (%core_lines, %folder_files, %folder_lines, @core_bad);
$core = abs_path($core) // die "no core directory\n";
find({ no_chdir => 1, wanted => sub {
    return unless -f $_;
    (my $rel = $_) =~ s{^\Q$core\E/}{};
    my $folder = $rel =~ m{^(.*)/} ? $1 : '.';
    open my $fh, '<', $_ or die "$_: $!\n";
    local $/;
    my $t = <$fh>;
    close $fh;
    my $n = () = $t =~ /\n/g;
    $core_lines{$rel} = $n;
    $folder_files{$folder}++;
    $folder_lines{$folder} += $n;
    push @core_bad, "$rel: $n lines, over $max_file" if $n > $max_file;
    push @core_bad, "$rel includes hiredis outside engine/"
        if $rel !~ m{^engine/} && $t =~ /^\s*#\s*include\s*[<"]hiredis\//m;
    push @core_bad, "$rel includes an api/ header (only api/ and the shim may)"
        if $rel !~ m{^api/} && $t =~ /^\s*#\s*include\s*"api\//m;
} }, $core);
die "no core files in $core\n" unless %core_lines;

print "== src/core: folders (files, lines)\n";
my ($core_files, $core_total) = (0, 0);
for my $f (sort keys %folder_files) {
    my $over = $folder_files{$f} > $max_folder ? "  over $max_folder files" : '';
    push @core_bad, "$f/: $folder_files{$f} files, over $max_folder" if $over;
    printf "%4d %6d  %s/%s\n", $folder_files{$f}, $folder_lines{$f}, $f, $over;
    $core_files += $folder_files{$f};
    $core_total += $folder_lines{$f};
}
printf "%4d %6d  in all\n", $core_files, $core_total;

if (@core_bad) {
    print "== src/core: over the rules\n";
    print "$_\n" for sort @core_bad;
    $failed = 1;
}

print $failed ? "shape: FAILED\n" : "shape: ok\n";
exit $failed;
